"""When each session's plan was last written (kv `plan_at:<session>`), to ignore late, older plans."""

from __future__ import annotations

import sqlite3

from worker.clock import now_ms


def _key(session_id: str) -> str:
    return f"plan_at:{session_id}"


def is_newer(conn: sqlite3.Connection, session_id: str, at: int | None) -> bool:
    """True unless `at` is older than the time of the stored plan (no time given: newer)."""
    if at is None:
        return True
    row = conn.execute("SELECT value FROM kv WHERE key = ?", (_key(session_id),)).fetchone()
    return row is None or not str(row[0]).isdigit() or at >= int(row[0])


def stamp(conn: sqlite3.Connection, session_id: str, at: int | None) -> None:
    now = now_ms()
    conn.execute(
        "INSERT INTO kv(key, value, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (_key(session_id), str(at if at is not None else now), now),
    )
