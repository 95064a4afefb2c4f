"""Client-generated event ids: a repeat of an acknowledged event is accepted and ignored."""

from __future__ import annotations

from worker.clock import now_ms
from worker.store.db import AnyDb, as_db
from worker.store.rows import insert_values


def seen(conn: AnyDb, event_id: str | None) -> str | None:
    """The item id recorded for `event_id`, or None if the event is new."""
    if not event_id:
        return None
    row = (
        as_db(conn)
        .execute("SELECT item_id FROM received_events WHERE event_id = ?", (event_id,))
        .fetchone()
    )
    return None if row is None else str(row[0])


def record_many(conn: AnyDb, events: list[tuple[str | None, str, object]]) -> None:
    """(event id, kind, item id) for each; rows without an event id are skipped."""
    at = now_ms()
    insert_values(
        conn,
        "INSERT INTO received_events(event_id, kind, item_id, created_at)",
        "(?, ?, ?, ?)",
        [(event_id, kind, str(item_id), at) for event_id, kind, item_id in events if event_id],
        "ON CONFLICT DO NOTHING",
    )


def record(conn: AnyDb, event_id: str | None, kind: str, item_id: object) -> None:
    if not event_id:
        return
    as_db(conn).execute(
        "INSERT INTO received_events(event_id, kind, item_id, created_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (event_id, kind, str(item_id), now_ms()),
    )
