"""PostgreSQL migration 7: what became of each injection, as SQLite's migration 16
(worker/store/m016_use.py)."""

STATEMENTS: list[str] = [
    "ALTER TABLE context_injections ADD COLUMN outcome TEXT",
    "ALTER TABLE context_injections ADD COLUMN evidence TEXT",
    "ALTER TABLE context_injections ADD COLUMN decided_at BIGINT",
    "CREATE INDEX context_injections_item ON context_injections(item_kind, item_id)",
]
