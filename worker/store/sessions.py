"""Sessions (id = the agent's session id) and their prompts.

Ported to the store's database edge (store/db.py): every function here runs on SQLite and on
PostgreSQL alike, its SQL written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.agents import AGENTS
from worker.clock import now_ms
from worker.store import privacy, projects
from worker.store.db import AnyDb, Dialect, Row, as_db
from worker.store.keyword_terms import analyse
from worker.store.rows import dump_json, insert_values, iso, load_json, placeholders
from worker.terms import split_text


def session_columns(
    dialect: Dialect, visible_to: str | None = None
) -> tuple[str, tuple[object, ...]]:
    """The columns `to_dict` reads, for `sessions s JOIN projects p`, and their parameters:
    given `visible_to`, the counts and last activity are of the prompts and observations that
    reader may see (store/privacy.py), as the session's lists are."""
    o_seen, o_args = _seen("o", visible_to)
    pr_seen, pr_args = _seen("pr", visible_to)
    last_activity = dialect.greatest(
        "s.started_at",
        "COALESCE(s.ended_at, 0)",
        "COALESCE((SELECT MAX(o.created_at) FROM observations o "
        f"WHERE o.session_id = s.id{o_seen}), 0)",
        "COALESCE((SELECT MAX(pr.created_at) FROM prompts pr "
        f"WHERE pr.session_id = s.id{pr_seen}), 0)",
    )
    sql = f"""s.id, s.project_id, p.key AS project, p.name AS project_name, s.parent_id,
    s.cwd, s.source, s.started_at, s.ended_at, s.end_reason, s.status, s.plan, s.meta, s.author,
    (SELECT COUNT(*) FROM prompts pr WHERE pr.session_id = s.id{pr_seen}) AS prompt_count,
    (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id{o_seen}) AS observation_count,
    {last_activity} AS last_activity_at"""
    return sql, (*pr_args, *o_args, *o_args, *pr_args)  # in the order they appear


def _seen(alias: str, visible_to: str | None) -> tuple[str, tuple[object, ...]]:
    if visible_to is None:
        return "", ()
    term, args = privacy.shared_or_by(alias, visible_to)
    return f" AND {term}", args


def agent_column(dialect: Dialect, alias: str) -> str:
    """The SQL of session `alias`'s agent: the `source` its hooks put in its meta (NULL for
    none); the list's filter and the feed's label (store/feed.py) read it alike."""
    return dialect.json_text(f"{alias}.meta", "source")


def known_agent(value: object) -> str | None:
    """An agent id of worker/agents.py as it is; anything else (none, another tool) None."""
    return value if isinstance(value, str) and value in AGENTS else None


def to_dict(row: Row) -> dict[str, Any]:
    started, ended = row["started_at"], row["ended_at"]
    meta = load_json(row["meta"], field="sessions.meta", kind=dict)
    return {
        "id": row["id"],
        "project": row["project"],
        "project_name": row["project_name"],
        "parent_id": row["parent_id"],
        "cwd": row["cwd"],
        "source": row["source"],
        "status": row["status"],
        "started_at": iso(row, "started_at"),
        "ended_at": iso(row, "ended_at"),
        "end_reason": row["end_reason"],
        "duration_seconds": round((ended - started) / 1000, 3) if ended is not None else None,
        "plan": load_json(row["plan"], field="sessions.plan", kind=list),
        "prompt_count": row["prompt_count"],
        "observation_count": row["observation_count"],
        "last_activity_at": iso(row, "last_activity_at"),
        "meta": meta,
        # The coding agent whose hooks recorded it (claude-code, codex, gemini, copilot, cursor).
        "agent": known_agent(meta.get("source")) if isinstance(meta, dict) else None,
        "author": row["author"],
    }


def get(conn: AnyDb, session_id: str, *, visible_to: str | None = None) -> dict[str, Any] | None:
    """The session; its counts of the rows `visible_to` may see (None: all, as a write's echo)."""
    db = as_db(conn)
    columns, args = session_columns(db.dialect, visible_to)
    row = db.execute(
        f"SELECT {columns} FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = ?",
        (*args, session_id),
    ).fetchone()
    return to_dict(row) if row is not None else None


def authors(conn: AnyDb, session_ids: list[str]) -> dict[str, str | None]:
    """The author of each known session among `session_ids`."""
    db = as_db(conn)
    unique = list(dict.fromkeys(session_ids))
    found: dict[str, str | None] = {}
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows = db.execute(f"SELECT id, author FROM sessions WHERE id IN ({marks})", chunk)
        found.update((row[0], row[1]) for row in rows)
    return found


def ensure_many(
    conn: AnyDb,
    project_of: dict[str, int],
    author_of: Mapping[str, str | None] | None = None,
) -> None:
    """Create the sessions not known yet, each in its project (by the author of the row that
    named it), with one statement; known ones are left as they are."""
    if project_of:
        at = now_ms()
        authors = author_of or {}
        insert_values(
            conn,
            "INSERT INTO sessions(id, project_id, started_at, status, author)",
            "(?, ?, ?, 'active', ?)",
            [(sid, project_id, at, authors.get(sid)) for sid, project_id in project_of.items()],
            "ON CONFLICT(id) DO NOTHING",
        )


def ensure(
    conn: AnyDb,
    session_id: str,
    project_id: int,
    *,
    cwd: str | None = None,
    source: str | None = None,
    parent_id: str | None = None,
    started_at: int | None = None,
    meta: Any = None,
    author: str | None = None,
) -> bool:
    """Create the session if new (True) or refresh its source/cwd on resume (False); a
    session made earlier without an author or meta (by a prompt or tool call that reached the
    worker before its start did, as a start spooled while the worker came up) takes these."""
    db = as_db(conn)
    row = db.execute("SELECT project_id FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        db.execute(
            "INSERT INTO sessions(id, project_id, parent_id, cwd, source, started_at, status, meta, "
            "author) VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)",
            (
                session_id,
                project_id,
                parent_id,
                cwd,
                source,
                started_at or now_ms(),
                dump_json(meta),
                author,
            ),
        )
        return True
    if author is not None:
        db.execute(
            "UPDATE sessions SET author = ? WHERE id = ? AND author IS NULL", (author, session_id)
        )
    if meta:
        db.execute(
            "UPDATE sessions SET meta = ? WHERE id = ? AND meta IS NULL",
            (dump_json(meta), session_id),
        )
    if source is not None or cwd is not None:
        db.execute(
            "UPDATE sessions SET source = COALESCE(?, source), cwd = COALESCE(?, cwd), "
            "status = 'active', ended_at = NULL WHERE id = ?",
            (source, cwd, session_id),
        )
    return False


def working_session(
    conn: AnyDb, project_id: int, at: int, idle_ms: int, author: str | None = None
) -> str | None:
    """The one session at work in the project at `at`: still open, and not idle (started,
    prompted or calling a tool within `idle_ms` before it: the dashboard's idle rule), and
    `author`'s when one is named (a team database holds everyone's sessions). None when no
    session is, or when two are (a memory saved then could be either's)."""
    db = as_db(conn)
    since = at - idle_ms
    whose, args = ("", ()) if author is None else (" AND (author IS NULL OR author = ?)", (author,))
    rows = db.execute(
        "SELECT id FROM sessions WHERE project_id = ? AND status = 'active'"
        + whose
        + " AND id IN ("
        "SELECT id FROM sessions WHERE project_id = ? AND started_at >= ? "
        "UNION SELECT session_id FROM prompts WHERE project_id = ? AND created_at >= ? "
        "UNION SELECT session_id FROM observations WHERE project_id = ? AND created_at >= ?"
        ") LIMIT 2",
        (project_id, *args, *(project_id, since) * 3),
    ).fetchall()
    return str(rows[0][0]) if len(rows) == 1 else None


def end(conn: AnyDb, session_id: str, reason: str | None, at: int | None) -> bool:
    cur = as_db(conn).execute(
        "UPDATE sessions SET status = 'ended', ended_at = ?, end_reason = ? WHERE id = ?",
        (at or now_ms(), reason, session_id),
    )
    return cur.rowcount > 0


def set_plan(conn: AnyDb, session_id: str, plan: Any) -> None:
    as_db(conn).execute("UPDATE sessions SET plan = ? WHERE id = ?", (dump_json(plan), session_id))


def list_page(
    conn: AnyDb,
    *,
    project: str | None,
    status: str | None,
    before: str | None,
    limit: int,
    visible_to: str | None,
    agent: str | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Newest first, with the counts of the rows `visible_to` may see (store/privacy.py); the
    cursor is '<started_at>:<id>' of the last row."""
    db = as_db(conn)
    where: list[str] = []
    args: list[object] = []
    if project is not None:
        pid = projects.find(db, project)
        if pid is None:
            return [], None
        where.append("s.project_id = ?")
        args.append(pid)
    if status is not None:
        where.append("s.status = ?")
        args.append(status)
    if agent is not None:
        where.append(f"{agent_column(db.dialect, 's')} = ?")
        args.append(agent)
    if before:
        ts, _, sid = before.partition(":")
        if ts.isdigit():
            where.append("(s.started_at < ? OR (s.started_at = ? AND s.id < ?))")
            args.extend([int(ts), int(ts), sid])
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    columns, column_args = session_columns(db.dialect, visible_to)
    rows = db.execute(
        f"SELECT {columns} FROM sessions s JOIN projects p "
        f"ON p.id = s.project_id {clause} ORDER BY s.started_at DESC, s.id DESC LIMIT ?",
        (*column_args, *args, limit + 1),
    ).fetchall()
    items = [to_dict(r) for r in rows[:limit]]
    cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        cursor = f"{last['started_at']}:{last['id']}"
    return items, cursor


def add_prompt(
    conn: AnyDb,
    session_id: str,
    project_id: int,
    text: str,
    created_at: int | None,
    meta: Any = None,
    author: str | None = None,
    *,
    shared: bool = False,
) -> dict[str, Any]:
    """Store the session's next prompt, private to its author on a team database unless
    `shared` (store/privacy.py)."""
    db = as_db(conn)
    number = db.execute(
        "SELECT COALESCE(MAX(number), 0) + 1 FROM prompts WHERE session_id = ?", (session_id,)
    ).fetchone()[0]
    columns = "session_id, project_id, number, text, created_at, meta, author, shared"
    values: tuple[Any, ...] = (
        session_id,
        project_id,
        number,
        text,
        created_at or now_ms(),
        dump_json(meta),
        author,
        1 if shared else 0,
    )
    if db.dialect.writes_index_text:
        columns += ", search_text, index_title, index_body"
        values += (split_text(text), *analyse("prompt", (text,)))
    prompt_id = db.insert(
        f"INSERT INTO prompts({columns}) VALUES ({placeholders(len(values))})", values
    )
    prompt = get_prompt(db, prompt_id)
    assert prompt is not None
    return prompt


PROMPT_COLUMNS = (
    "pr.id, pr.session_id, p.key AS project, pr.number, pr.text, pr.created_at, pr.meta, pr.author, "
    "pr.shared"
)


def prompt_to_dict(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "session_id": row["session_id"],
        "project": row["project"],
        "number": row["number"],
        "text": row["text"],
        "created_at": iso(row, "created_at"),
        "meta": load_json(row["meta"], field="sessions.meta", kind=dict),
        "author": row["author"],
        "shared": bool(row["shared"]),
    }


def get_prompt(conn: AnyDb, prompt_id: int) -> dict[str, Any] | None:
    row = (
        as_db(conn)
        .execute(
            f"SELECT {PROMPT_COLUMNS} FROM prompts pr JOIN projects p ON p.id = pr.project_id "
            "WHERE pr.id = ?",
            (prompt_id,),
        )
        .fetchone()
    )
    return prompt_to_dict(row) if row is not None else None


def prompts_of(
    conn: AnyDb, session_id: str, limit: int = 500, *, visible_to: str | None = None
) -> list[dict[str, Any]]:
    """The session's prompts in order; given `visible_to`, only those shared or by that author
    (store/privacy.py)."""
    where = "pr.session_id = ?"
    args: tuple[object, ...] = (session_id,)
    if visible_to is not None:
        visible, visible_args = privacy.shared_or_by("pr", visible_to)
        where, args = f"{where} AND {visible}", (*args, *visible_args)
    rows = (
        as_db(conn)
        .execute(
            f"SELECT {PROMPT_COLUMNS} FROM prompts pr JOIN projects p ON p.id = pr.project_id "
            f"WHERE {where} ORDER BY pr.number LIMIT ?",
            (*args, limit),
        )
        .fetchall()
    )
    return [prompt_to_dict(r) for r in rows]
