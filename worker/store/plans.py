"""When each session's plan was last written (kv `plan_at:<session>`), to ignore late, older plans."""

from __future__ import annotations

from worker.clock import now_ms
from worker.store import kv
from worker.store.db import AnyDb


def _key(session_id: str) -> str:
    return f"plan_at:{session_id}"


def is_newer(conn: AnyDb, session_id: str, at: int | None) -> bool:
    """True unless `at` is older than the time of the stored plan (no time given: newer)."""
    if at is None:
        return True
    stored = kv.get_json(conn, _key(session_id))
    return not isinstance(stored, int) or stored < 0 or at >= stored


def stamp(conn: AnyDb, session_id: str, at: int | None) -> None:
    kv.put_json(conn, _key(session_id), at if at is not None else now_ms())
