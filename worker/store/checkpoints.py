"""Checkpoints: snapshots of where a session's work stands (PreCompact, Stop); latest wins.

Ported to the store's database edge (store/db.py): every function here runs on SQLite and on
PostgreSQL alike, its SQL written once.
"""

from __future__ import annotations

from typing import Any

from worker.clock import now_ms
from worker.store.db import AnyDb, Row, as_db
from worker.store.rows import dump_json, iso, load_json
from worker.store.summaries import join_lines, split_lines

COLUMNS = """c.id, c.session_id, c.project_id, p.key AS project, c.trigger, c.task, c.progress,
    c.next_steps, c.open_questions, c.files, c.created_at, c.meta, c.author"""
FROM = "FROM checkpoints c JOIN projects p ON p.id = c.project_id"
_CONTENT_KEYS = ("task", "progress", "next_steps", "open_questions", "files")


def to_dict(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "session_id": row["session_id"],
        "project": row["project"],
        "trigger": row["trigger"],
        "task": row["task"],
        "progress": split_lines(row["progress"]),
        "next_steps": split_lines(row["next_steps"]),
        "open_questions": split_lines(row["open_questions"]),
        "files": load_json(row["files"], [], field="checkpoints.files"),
        "created_at": iso(row, "created_at"),
        "meta": load_json(row["meta"], field="checkpoints.meta", kind=dict),
        "author": row["author"],
    }


def get(conn: AnyDb, checkpoint_id: int) -> dict[str, Any] | None:
    row = (
        as_db(conn).execute(f"SELECT {COLUMNS} {FROM} WHERE c.id = ?", (checkpoint_id,)).fetchone()
    )
    return to_dict(row) if row is not None else None


def latest(conn: AnyDb, session_id: str) -> dict[str, Any] | None:
    row = (
        as_db(conn)
        .execute(
            f"SELECT {COLUMNS} {FROM} WHERE c.session_id = ? ORDER BY c.created_at DESC, c.id DESC "
            "LIMIT 1",
            (session_id,),
        )
        .fetchone()
    )
    return to_dict(row) if row is not None else None


def latest_as_written(conn: AnyDb, session_id: str) -> dict[str, Any] | None:
    """The session's last checkpoint as the session detail shows it: texts as written, no ids."""
    row = (
        as_db(conn)
        .execute(
            "SELECT trigger, task, progress, next_steps, open_questions, files, created_at "
            "FROM checkpoints WHERE session_id = ? ORDER BY created_at DESC, id DESC LIMIT 1",
            (session_id,),
        )
        .fetchone()
    )
    if row is None:
        return None
    return {
        "trigger": row["trigger"],
        "task": row["task"],
        "progress": row["progress"],
        "next_steps": row["next_steps"],
        "open_questions": row["open_questions"],
        "files": load_json(row["files"], [], field="checkpoints.files"),
        "created_at": iso(row, "created_at"),
    }


def of_session(conn: AnyDb, session_id: str, limit: int) -> list[dict[str, Any]]:
    """The session's checkpoints, newest first."""
    rows = (
        as_db(conn)
        .execute(
            f"SELECT {COLUMNS} {FROM} WHERE c.session_id = ? ORDER BY c.created_at DESC, c.id DESC "
            "LIMIT ?",
            (session_id, limit),
        )
        .fetchall()
    )
    return [to_dict(r) for r in rows]


def insert(
    conn: AnyDb,
    session_id: str,
    project_id: int,
    *,
    trigger: str | None,
    task: str,
    progress: list[str],
    next_steps: list[str],
    open_questions: list[str],
    files: list[str],
    meta: Any = None,
    at: int | None = None,
) -> tuple[dict[str, Any], bool]:
    """Add a checkpoint; if it says exactly what the session's latest one says, keep that one.

    Returns (checkpoint, created). Repeated Stop/PreCompact with no new work add no rows.
    """
    db = as_db(conn)
    current = latest(db, session_id)
    fresh = {
        "task": task,
        "progress": [" ".join(s.split()) for s in progress if s.strip()],
        "next_steps": [" ".join(s.split()) for s in next_steps if s.strip()],
        "open_questions": [" ".join(s.split()) for s in open_questions if s.strip()],
        "files": files,
    }
    if current is not None and all(current[k] == fresh[k] for k in _CONTENT_KEYS):
        return current, False
    checkpoint_id = db.insert(
        "INSERT INTO checkpoints(session_id, project_id, trigger, task, progress, next_steps, "
        "open_questions, files, created_at, meta, author) VALUES (?,?,?,?,?,?,?,?,?,?, "
        # A checkpoint is by the author of its session.
        "(SELECT author FROM sessions WHERE id = ?))",
        (
            session_id,
            project_id,
            trigger,
            task,
            join_lines(progress),
            join_lines(next_steps),
            join_lines(open_questions),
            dump_json(files),
            at or now_ms(),
            dump_json(meta),
            session_id,
        ),
    )
    row = get(db, checkpoint_id)
    assert row is not None
    return row, True
