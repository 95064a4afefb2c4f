"""Session detail: one session with everything recorded in it (the API and the session page)."""

from __future__ import annotations

from typing import Any

from worker.container import Cairn
from worker.errors import NotFound
from worker.store import observations, sessions
from worker.store.rows import iso, load_json


async def session_detail(cairn: Cairn, sid: str) -> dict[str, Any]:
    """A session with its prompts, observations (oldest first), summary and last checkpoint."""

    def read(conn: Any) -> dict[str, Any] | None:
        row = sessions.get(conn, sid)
        if row is None:
            return None
        obs, _ = observations.list_page(
            conn,
            observations.ObservationQuery(session_id=sid, include_archived=True, limit=500),
        )
        summary = conn.execute(
            "SELECT request, completed, learned, files, next_steps, created_at, updated_at "
            "FROM summaries WHERE session_id = ?",
            (sid,),
        ).fetchone()
        checkpoint = conn.execute(
            "SELECT trigger, task, progress, next_steps, open_questions, files, created_at "
            "FROM checkpoints WHERE session_id = ? ORDER BY created_at DESC, id DESC LIMIT 1",
            (sid,),
        ).fetchone()
        row["prompts"] = sessions.prompts_of(conn, sid)
        row["observations"] = list(reversed(obs))
        row["summary"] = (
            None
            if summary is None
            else {
                "request": summary["request"],
                "completed": summary["completed"],
                "learned": summary["learned"],
                "files": load_json(summary["files"], [], field="summaries.files"),
                "next_steps": summary["next_steps"],
                "created_at": iso(summary, "created_at"),
                "updated_at": iso(summary, "updated_at"),
            }
        )
        row["checkpoint"] = (
            None
            if checkpoint is None
            else {
                "trigger": checkpoint["trigger"],
                "task": checkpoint["task"],
                "progress": checkpoint["progress"],
                "next_steps": checkpoint["next_steps"],
                "open_questions": checkpoint["open_questions"],
                "files": load_json(checkpoint["files"], [], field="checkpoints.files"),
                "created_at": iso(checkpoint, "created_at"),
            }
        )
        return row

    row = await cairn.store.read(read)
    if row is None:
        raise NotFound(f"session {sid!r} does not exist", field="session_id")
    return row
