"""Session summaries (one row per session, rewritten when Stop fires again) and session activity.

Ported to the store's database edge (store/db.py): every function here runs on SQLite and on
PostgreSQL alike, its SQL written once. Summaries are shared with the team (issue 22).
"""

from __future__ import annotations

from typing import Any

from worker.clock import now_ms
from worker.store import privacy
from worker.store.db import AnyDb, Row, as_db
from worker.store.keyword_terms import analyse
from worker.store.rows import dump_json, iso, load_json, placeholders
from worker.store.sessions import get as get_session
from worker.store.sessions import prompts_of
from worker.terms import split_text

# A session longer than this is summarised from its most recent observations.
MAX_SESSION_OBSERVATIONS = 5000

COLUMNS = """su.id, su.session_id, su.project_id, p.key AS project, su.request, su.completed,
    su.learned, su.files, su.next_steps, su.created_at, su.updated_at, su.meta, su.author"""
FROM = "FROM summaries su JOIN projects p ON p.id = su.project_id"


# What a rewrite of a session's summary leaves as first written.
KEPT_ON_REWRITE = ("session_id", "created_at")


def join_lines(items: list[str]) -> str:
    """List columns are stored one item per line (items never contain newlines)."""
    return "\n".join(" ".join(item.split()) for item in items if item.strip())


def split_lines(text: str | None) -> list[str]:
    return [line for line in (text or "").split("\n") if line.strip()]


def session_activity(
    conn: AnyDb, session_id: str, *, visible_to: str | None
) -> dict[str, Any] | None:
    """The session with its prompts and observations (archived included), oldest first: those
    `visible_to` may see (store/privacy.py), so a worker summarising a teammate's session never
    reads the teammate's private rows (None: all; the session's own worker sees all of its own).

    Observations are lean dicts (id, type, title, tool_name, files, body and meta of commands,
    created_at in epoch ms): what the summary and checkpoint builders read.
    """
    db = as_db(conn)
    session = get_session(db, session_id, visible_to=visible_to)
    if session is None:
        return None
    seen, seen_args = ("", ()) if visible_to is None else privacy.shared_or_by("o", visible_to)
    # Lean rows: what the summary and checkpoint read (bodies and meta of commands only).
    rows = db.execute(
        "SELECT * FROM (SELECT id, type, title, tool_name, files, created_at, "
        "CASE WHEN type = 'command' THEN body ELSE '' END AS body, "
        "CASE WHEN type = 'command' THEN meta END AS meta FROM observations o "
        f"WHERE session_id = ?{f' AND {seen}' if seen else ''} "
        "ORDER BY created_at DESC, id DESC LIMIT ?) AS recent ORDER BY created_at, id",
        (session_id, *seen_args, MAX_SESSION_OBSERVATIONS),
    ).fetchall()
    session["project_id"] = db.execute(
        "SELECT project_id FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()[0]
    return {
        "session": session,
        "prompts": prompts_of(
            db, session_id, limit=MAX_SESSION_OBSERVATIONS, visible_to=visible_to
        ),
        "observations": [
            {
                "id": r["id"],
                "type": r["type"],
                "title": r["title"],
                "tool_name": r["tool_name"],
                "files": load_json(r["files"], [], field="summaries.files"),
                "body": r["body"],
                "meta": load_json(r["meta"], field="summaries.meta", kind=dict),
                "created_at": r["created_at"],
            }
            for r in rows
        ],
    }


def to_dict(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "session_id": row["session_id"],
        "project": row["project"],
        "request": row["request"],
        "completed": split_lines(row["completed"]),
        "files": load_json(row["files"], [], field="summaries.files"),
        "learned": split_lines(row["learned"]),
        "next_steps": split_lines(row["next_steps"]),
        "created_at": iso(row, "created_at"),
        "updated_at": iso(row, "updated_at"),
        "meta": load_json(row["meta"], field="summaries.meta", kind=dict),
        "author": row["author"],
    }


def get(conn: AnyDb, session_id: str) -> dict[str, Any] | None:
    row = (
        as_db(conn)
        .execute(f"SELECT {COLUMNS} {FROM} WHERE su.session_id = ?", (session_id,))
        .fetchone()
    )
    return to_dict(row) if row is not None else None


def as_written(conn: AnyDb, session_id: str) -> dict[str, Any] | None:
    """The session's summary as the session detail shows it: its texts as written, no ids."""
    row = (
        as_db(conn)
        .execute(
            "SELECT request, completed, learned, files, next_steps, created_at, updated_at "
            "FROM summaries WHERE session_id = ?",
            (session_id,),
        )
        .fetchone()
    )
    if row is None:
        return None
    return {
        "request": row["request"],
        "completed": row["completed"],
        "learned": row["learned"],
        "files": load_json(row["files"], [], field="summaries.files"),
        "next_steps": row["next_steps"],
        "created_at": iso(row, "created_at"),
        "updated_at": iso(row, "updated_at"),
    }


def upsert(
    conn: AnyDb,
    session_id: str,
    project_id: int,
    *,
    request: str,
    completed: list[str],
    files: list[str],
    learned: list[str],
    next_steps: list[str],
    meta: Any = None,
    at: int | None = None,
) -> tuple[dict[str, Any], bool]:
    """Write the session's summary; a repeat rewrites the one row. Returns (summary, created)."""
    db = as_db(conn)
    stamp = at or now_ms()
    existed = (
        db.execute("SELECT 1 FROM summaries WHERE session_id = ?", (session_id,)).fetchone()
        is not None
    )
    columns = [
        "session_id",
        "project_id",
        "request",
        "completed",
        "learned",
        "files",
        "next_steps",
        "created_at",
        "updated_at",
        "meta",
    ]
    values: list[Any] = [
        session_id,
        project_id,
        request,
        join_lines(completed),
        join_lines(learned),
        dump_json(files),
        join_lines(next_steps),
        stamp,
        stamp,
        dump_json(meta),
    ]
    if db.dialect.writes_index_text:
        # The keyword index's words (PostgreSQL migration 3), as SQLite's m002 trigger takes them.
        # And the worker's analysed terms (migration 6), as SQLite's search_index holds them.
        columns += ["search_title", "search_text", "index_title", "index_body"]
        request, completed, learned, files_json, next_steps = values[2:7]
        values += [split_text(values[2]), split_text(*values[3:7])]
        values += analyse("summary", (request, completed, learned, next_steps, files_json))
    rewritten = [f"{c} = excluded.{c}" for c in columns if c not in KEPT_ON_REWRITE]
    db.execute(
        f"INSERT INTO summaries({', '.join(columns)}, author) "
        f"VALUES ({placeholders(len(columns))}, "
        # A summary is by the author of the session it summarises.
        "(SELECT author FROM sessions WHERE id = ?)) "
        f"ON CONFLICT(session_id) DO UPDATE SET {', '.join(rewritten)}",
        (*values, session_id),
    )
    summary = get(db, session_id)
    assert summary is not None
    return summary, not existed
