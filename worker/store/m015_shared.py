"""Migration 15: prompts and observations carry a `shared` flag (0/1, default 0).

On a team database these are private to their author unless shared (store/privacy.py). The
column exists on SQLite too so that the same reads and the same tests serve both databases, and
a local history pushed to a team keeps its choice; a single-user store never filters by it.
(An added column with a constant default costs SQLite no rewrite of the table.)
"""

STATEMENTS: list[str] = [
    f"ALTER TABLE {table} ADD COLUMN shared INTEGER NOT NULL DEFAULT 0"
    for table in ("prompts", "observations")
]
