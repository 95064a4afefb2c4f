"""Migration 13: a memory saved with its own date (imported history) says so.

Imported history is true at its time: a dated memory is never chained into an update by the
compression pass (two dated facts, "used PostgreSQL 15" in 2022 and "16" in 2023, are both
history). Memories stored before this step count as live (0): nothing recorded which were dated.
"""

STATEMENTS: list[str] = [
    "ALTER TABLE memories ADD COLUMN dated INTEGER NOT NULL DEFAULT 0",
]
