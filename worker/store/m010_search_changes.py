"""Migration 10: a log of which keyword-index rows changed, for the in-memory BM25 index.

The in-memory index (store/keyword_index.py) copies `search_index` and must learn about every
later change, whichever path made it (the m002 triggers, `observations.insert_many`, imports,
migrations). FTS5 allows no triggers on its virtual table, but it stores each row's text in its
content table `search_index_content` (columns id, c0..c5: the documented FTS5 layout), and every
insert, update (delete + insert) and delete of an index row goes through that table. Triggers
there record the row id with a sequence number; `INSERT OR REPLACE` keeps one entry per row, so
the log never grows past the index itself. The index reads the entries newer than the last it
applied before each query.
"""

from __future__ import annotations

_RECORD = (
    "INSERT OR REPLACE INTO search_changes(rid, seq) "
    "VALUES ({row}.id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM search_changes))"
)

STATEMENTS: list[str] = [
    """CREATE TABLE search_changes (
        rid INTEGER PRIMARY KEY,
        seq INTEGER NOT NULL
    )""",
    "CREATE INDEX search_changes_seq ON search_changes(seq)",
    "CREATE TRIGGER search_index_content_ai AFTER INSERT ON search_index_content "
    f"BEGIN {_RECORD.format(row='new')}; END",
    "CREATE TRIGGER search_index_content_ad AFTER DELETE ON search_index_content "
    f"BEGIN {_RECORD.format(row='old')}; END",
]
