"""Migration 10: a log of which keyword-index rows changed, for the in-memory BM25 index.

The in-memory index (retrieval/keyword_index.py) copies `search_index` and must learn about every
later change, whichever path made it (the m002/m009 triggers, `observations.insert_many`,
imports). Every index row belongs to an item of one of the SOURCES tables, and is written when
that item is inserted, deleted, or updated in a watched column: triggers on those tables record
the index row id (item id * 8 + kind code) with a sequence number, one entry per row, so the
log never grows past the index. The entry is written with an UPSERT: an `INSERT OR REPLACE`
takes the conflict policy of the statement that fired the trigger, and the summaries upsert
(`INSERT ... ON CONFLICT DO UPDATE`) turned it into ABORT. The index reads the entries newer
than the last it applied before each query.

(Triggers on FTS5's own content table would catch the same writes, but SQLite runs them ~75 us
a row slower: they fire inside FTS5's internal statements.)
"""

from __future__ import annotations

from worker.store.m002_retrieval import KIND_CODES, SOURCES


def _statements() -> list[str]:
    out = [
        """CREATE TABLE search_changes (
            rid INTEGER PRIMARY KEY,
            seq INTEGER NOT NULL
        )""",
        "CREATE INDEX search_changes_seq ON search_changes(seq)",
    ]
    for kind, (table, _title, _body, _project, watched) in SOURCES.items():
        code = KIND_CODES[kind]

        def record(row: str, code: int = code) -> str:
            return (
                "INSERT INTO search_changes(rid, seq) VALUES "
                f"({row}.id * 8 + {code}, (SELECT COALESCE(MAX(seq), 0) + 1 FROM search_changes)) "
                "ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;"
            )

        out += [
            f"CREATE TRIGGER {table}_changes_ai AFTER INSERT ON {table} BEGIN {record('new')} END",
            f"CREATE TRIGGER {table}_changes_ad AFTER DELETE ON {table} BEGIN {record('old')} END",
            f"CREATE TRIGGER {table}_changes_au AFTER UPDATE OF {watched} ON {table} "
            f"BEGIN {record('old')} {record('new')} END",
        ]
    return out


STATEMENTS: list[str] = _statements()
