"""Session detail: one session with everything recorded in it (the API and the session page)."""

from __future__ import annotations

import sqlite3
from typing import Any

from worker.container import Cairn
from worker.errors import NotFound
from worker.store import checkpoints, observations, sessions, summaries


async def session_detail(cairn: Cairn, sid: str) -> dict[str, Any]:
    """A session with its prompts, observations (oldest first), summary and last checkpoint."""

    def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
        row = sessions.get(conn, sid, visible_to=cairn.reader)
        if row is None:
            return None
        obs, _ = observations.list_page(
            conn,
            observations.ObservationQuery(
                session_id=sid, include_archived=True, limit=500, visible_to=cairn.reader
            ),
        )
        row["prompts"] = sessions.prompts_of(conn, sid, visible_to=cairn.reader)
        row["observations"] = list(reversed(obs))
        row["summary"] = summaries.as_written(conn, sid)
        row["checkpoint"] = checkpoints.latest_as_written(conn, sid)
        return row

    row = await cairn.store.read(read)
    if row is None:
        raise NotFound(f"session {sid!r} does not exist", field="session_id")
    return row
