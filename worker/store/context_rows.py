"""The rows the session-start context is built from (recent observations, core memories, the last
summary and checkpoint, the most written files) and the record of what was injected."""

from __future__ import annotations

from typing import Any

from worker.store.db import AnyDb, as_db
from worker.store.items import Ref, load_items
from worker.store.privacy import shared_or_by
from worker.store.rows import load_json, ms


def recent_observations(
    conn: AnyDb, project_id: int, limit: int, visible_to: str | None = None
) -> list[dict[str, Any]]:
    """The project's newest live observations; given `visible_to`, only those shared or by
    that author (store/privacy.py)."""
    visible, visible_args = ("1 = 1", ()) if visible_to is None else shared_or_by("o", visible_to)
    ids = [
        int(r[0])
        for r in as_db(conn).execute(
            "SELECT o.id FROM observations o WHERE o.project_id = ? AND o.archived_at IS NULL "
            f"AND {visible} ORDER BY o.created_at DESC, o.id DESC LIMIT ?",
            (project_id, *visible_args, limit),
        )
    ]
    items = load_items(conn, [("observation", i) for i in ids])
    return [items[("observation", i)] for i in ids if ("observation", i) in items]


def core_memories(
    conn: AnyDb, project_id: int | None, min_importance: int, now: int, limit: int
) -> list[dict[str, Any]]:
    """Pinned or important live memories of the project, and global ones (project NULL)."""
    rows = (
        as_db(conn)
        .execute(
            """SELECT id FROM memories
           WHERE (project_id = ? OR project_id IS NULL)
             AND archived_at IS NULL AND superseded_by IS NULL
             AND (expires_at IS NULL OR expires_at > ?)
             AND (pinned = 1 OR importance >= ?)
           ORDER BY pinned DESC, importance DESC, updated_at DESC, id DESC LIMIT ?""",
            (project_id, now, min_importance, limit),
        )
        .fetchall()
    )
    ids = [int(r[0]) for r in rows]
    items = load_items(conn, [("memory", i) for i in ids])
    return [items[("memory", i)] for i in ids if ("memory", i) in items]


def latest_summary(conn: AnyDb, project_id: int) -> dict[str, Any] | None:
    row = (
        as_db(conn)
        .execute(
            "SELECT id FROM summaries WHERE project_id = ? ORDER BY updated_at DESC, id DESC LIMIT 1",
            (project_id,),
        )
        .fetchone()
    )
    if row is None:
        return None
    return load_items(conn, [("summary", int(row[0]))]).get(("summary", int(row[0])))


def latest_checkpoint(
    conn: AnyDb, project_id: int, session_id: str | None
) -> dict[str, Any] | None:
    """The session's last checkpoint, else the project's."""
    row = None
    if session_id:
        row = (
            as_db(conn)
            .execute(
                "SELECT * FROM checkpoints WHERE session_id = ? ORDER BY created_at DESC, id DESC "
                "LIMIT 1",
                (session_id,),
            )
            .fetchone()
        )
    if row is None:
        row = (
            as_db(conn)
            .execute(
                "SELECT * FROM checkpoints WHERE project_id = ? ORDER BY created_at DESC, id DESC "
                "LIMIT 1",
                (project_id,),
            )
            .fetchone()
        )
    if row is None:
        return None
    return {
        "kind": "checkpoint",
        "id": int(row["id"]),
        "session_id": row["session_id"],
        "trigger": row["trigger"],
        "task": row["task"],
        "progress": row["progress"],
        "next_steps": row["next_steps"],
        "open_questions": row["open_questions"],
        "files": load_json(row["files"], [], field="checkpoints.files"),
        "created_at": ms(row["created_at"], "checkpoints.created_at") or 0,
    }


def top_files(
    conn: AnyDb, project_id: int, limit: int, visible_to: str | None = None
) -> list[tuple[str, int]]:
    """The files this project's sessions wrote most often; given `visible_to`, counted over the
    file writes of the observations shared or by that author (a path is a private row's text)."""
    db = as_db(conn)
    if visible_to is None:
        sql = """SELECT file, COUNT(*) AS n FROM file_writes WHERE project_id = ?
           GROUP BY file ORDER BY n DESC, file LIMIT ?"""
        args: tuple[object, ...] = (project_id, limit)
    else:
        visible, visible_args = shared_or_by("o", visible_to)
        sql = f"""SELECT fw.file, COUNT(*) AS n FROM file_writes fw
           JOIN observations o ON o.id = fw.observation_id
           WHERE fw.project_id = ? AND {visible}
           GROUP BY fw.file ORDER BY n DESC, fw.file LIMIT ?"""
        args = (project_id, *visible_args, limit)
    return [(str(r[0]), int(r[1])) for r in db.execute(sql, args).fetchall()]


def injected(conn: AnyDb, session_id: str) -> set[Ref]:
    return {
        (str(r[0]), int(r[1]))
        for r in as_db(conn).execute(
            "SELECT item_kind, item_id FROM context_injections WHERE session_id = ?",
            (session_id,),
        )
    }


def record_injections(conn: AnyDb, session_id: str, refs: list[Ref], at: int) -> None:
    as_db(conn).executemany(
        "INSERT INTO context_injections(session_id, item_kind, item_id, injected_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [(session_id, kind, item_id, at) for kind, item_id in refs],
    )
