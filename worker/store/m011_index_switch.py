"""Migration 11: the observation index trigger is switched off by a table, not a Python call.

Migration 9 lets `observations.insert_many` write the keyword-index rows of its batch itself,
with the insert trigger switched off through `cairn_auto_index()`, a Python function: SQLite
called it for every inserted row, and each call had to retake Python's GIL in the middle of the
statement, which under load the event loop holds most of the time. The switch is now a one-row
table that the trigger reads in SQL. `sql_terms.batch_indexing` flips it inside the caller's
transaction, so no other connection ever sees it off, and a rolled-back batch leaves it on.
"""

from worker.store.m002_retrieval import insert_statement

STATEMENTS: list[str] = [
    "CREATE TABLE index_switch (id INTEGER PRIMARY KEY CHECK (id = 1), auto INTEGER NOT NULL)",
    "INSERT INTO index_switch(id, auto) VALUES (1, 1)",
    "DROP TRIGGER IF EXISTS observations_terms_ai",
    "CREATE TRIGGER observations_terms_ai AFTER INSERT ON observations "
    "WHEN (SELECT auto FROM index_switch WHERE id = 1) "
    f"BEGIN {insert_statement('observation', 'new')}; END",
]
