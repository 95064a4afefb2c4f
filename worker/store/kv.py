"""Small named values in the `kv` table (JSON text), for state that must survive a restart
(SQLite and PostgreSQL alike, store/db.py)."""

from __future__ import annotations

import json
from typing import Any

from worker.clock import now_ms
from worker.store.db import AnyDb, as_db


def get_json(conn: AnyDb, key: str) -> Any:
    """The value stored under `key`, or None (also for a value that is not valid JSON)."""
    row = as_db(conn).execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    try:
        return json.loads(row[0])
    except ValueError:
        return None


def put_json(conn: AnyDb, key: str, value: Any) -> None:
    as_db(conn).execute(
        "INSERT INTO kv(key, value, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (key, json.dumps(value, ensure_ascii=False, separators=(",", ":")), now_ms()),
    )
