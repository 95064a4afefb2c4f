"""The dashboard's read models: one time-ordered stream over observations, prompts, summaries
and memories (feed, timeline), plus the counts behind the stats charts.

Every read of the stream names its reader (`visible_to`, Cairn.reader): on a team database a
teammate's private prompts and observations are left out (store/privacy.py); None (SQLite)
reads every row.

Ported to the store's database edge (store/db.py): SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from typing import Any

from worker.store import privacy, projects, sessions
from worker.store.db import AnyDb, Dialect, Row, as_db
from worker.store.items import PRIVATE_KINDS
from worker.store.observations import TYPES
from worker.store.rows import load_json

KINDS = ("observation", "prompt", "summary", "memory")
# What the feed's type filter accepts: an observation type or a whole kind.
FILTERS = (*TYPES, "prompt", "summary", "memory")
BODY_CHARS = 4000

_SELECT = {
    "observation": """SELECT 'observation' AS kind, o.id, o.created_at AS at, p.key AS project,
        p.name AS project_name, o.session_id, o.type AS type, o.title AS title,
        substr(o.body, 1, {n}) AS body, length(o.body) AS body_len, o.files AS files,
        o.tool_name AS tool, o.importance AS importance, o.archived_at AS archived_at,
        o.author AS author, {agent} AS agent
        FROM observations o JOIN projects p ON p.id = o.project_id
        LEFT JOIN sessions ses ON ses.id = o.session_id""",
    "prompt": """SELECT 'prompt' AS kind, r.id, r.created_at AS at, p.key AS project,
        p.name AS project_name, r.session_id, 'prompt' AS type,
        substr(r.text, 1, 300) AS title, substr(r.text, 1, {n}) AS body,
        length(r.text) AS body_len, '[]' AS files, NULL AS tool,
        CAST(NULL AS BIGINT) AS importance, CAST(NULL AS BIGINT) AS archived_at,
        r.author AS author, {agent} AS agent
        FROM prompts r JOIN projects p ON p.id = r.project_id
        LEFT JOIN sessions ses ON ses.id = r.session_id""",
    "summary": """SELECT 'summary' AS kind, s.id, s.updated_at AS at, p.key AS project,
        p.name AS project_name, s.session_id, 'summary' AS type,
        substr(COALESCE(NULLIF(s.request, ''), NULLIF(s.completed, ''), 'Session summary'), 1, 300)
            AS title,
        substr(trim(s.completed || '\n' || s.learned || '\n' || s.next_steps), 1, {n})
            AS body,
        length(s.completed) + length(s.learned) + length(s.next_steps) AS body_len,
        s.files AS files, NULL AS tool, CAST(NULL AS BIGINT) AS importance,
        CAST(NULL AS BIGINT) AS archived_at, s.author AS author, {agent} AS agent
        FROM summaries s JOIN projects p ON p.id = s.project_id
        LEFT JOIN sessions ses ON ses.id = s.session_id""",
    "memory": """SELECT 'memory' AS kind, m.id, m.created_at AS at, p.key AS project,
        COALESCE(p.name, 'global') AS project_name, m.session_id, m.kind AS type,
        substr(m.content, 1, 300) AS title, substr(m.content, 1, {n}) AS body,
        length(m.content) AS body_len, '[]' AS files, NULL AS tool, m.importance AS importance,
        m.archived_at AS archived_at, m.author AS author, {agent} AS agent
        FROM memories m LEFT JOIN projects p ON p.id = m.project_id
        LEFT JOIN sessions ses ON ses.id = m.session_id""",
}
# Every item is labelled with the agent of its session (`ses`, sessions.agent_column): an item of
# no session (a memory added by hand) or of a session no hook named (an older one) has none.
# (The typed NULLs: PostgreSQL reads a bare NULL in a subquery as text, which a UNION cannot
# match with the other parts' numbers.)
_ALIAS = {"observation": "o", "prompt": "r", "summary": "s", "memory": "m"}
_TIME = {"observation": "created_at", "prompt": "created_at", "summary": "updated_at"}


def _row(row: Row) -> dict[str, Any]:
    item = dict(row)
    item["files"] = load_json(item.get("files"), [], field="feed files") or []
    item["truncated"] = (item.get("body_len") or 0) > BODY_CHARS
    item["agent"] = sessions.known_agent(item.get("agent"))
    return item


def _select(kind: str, dialect: Dialect) -> str:
    return _SELECT[kind].format(n=BODY_CHARS, agent=sessions.agent_column(dialect, "ses"))


def _kinds_for(type_: str | None) -> list[str]:
    if type_ in KINDS[1:]:
        return [type_]
    if type_ in TYPES:
        return ["observation"]
    return list(KINDS)


def _visible(kind: str, visible_to: str | None) -> tuple[list[str], list[Any]]:
    """The privacy term of one kind's rows (none for a shared kind or an unnamed reader)."""
    if visible_to is None or kind not in PRIVATE_KINDS:
        return [], []
    term, args = privacy.shared_or_by(_ALIAS[kind], visible_to)
    return [term], list(args)


def _part(
    dialect: Dialect,
    kind: str,
    project_id: int | None,
    type_: str | None,
    agent: str | None,
    edge: tuple[str, tuple[int, str, int]] | None,
    archived: bool,
    visible_to: str | None,
) -> tuple[str, list[Any]]:
    """One kind's newest (or, going forward, oldest) rows past the cursor edge."""
    a = _ALIAS[kind]
    at = f"{a}.{_TIME.get(kind, 'created_at')}"
    where, args = _visible(kind, visible_to)
    if project_id is not None:
        where.append(f"{a}.project_id = ?")
        args.append(project_id)
    if kind == "observation" and type_ in TYPES:
        where.append("o.type = ?")
        args.append(type_)
    if agent is not None:
        where.append(f"{sessions.agent_column(dialect, 'ses')} = ?")
        args.append(agent)
    if kind in ("observation", "memory") and not archived:
        where.append(f"{a}.archived_at IS NULL")
    forward = edge is not None and edge[0] == ">"
    if edge is not None:
        # (at, kind, id) compared with the cursor, spelt so the time index serves the range.
        cmp, (t, k, i) = edge
        if kind == k:
            where.append(f"{at} {cmp}= ? AND ({at} {cmp} ? OR {a}.id {cmp} ?)")
            args.extend([t, t, i])
        elif (kind < k) == (cmp == "<"):
            where.append(f"{at} {cmp}= ?")
            args.append(t)
        else:
            where.append(f"{at} {cmp} ?")
            args.append(t)
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    order = "ASC" if forward else "DESC"
    sql = (
        f"SELECT * FROM ({_select(kind, dialect)}{clause} "
        f"ORDER BY {at} {order}, {a}.id {order} LIMIT ?) AS {kind}_part"
    )
    return sql, args


def stream(
    conn: AnyDb,
    *,
    visible_to: str | None,
    project: str | None = None,
    type_: str | None = None,
    agent: str | None = None,
    before: tuple[int, str, int] | None = None,
    after: tuple[int, str, int] | None = None,
    include_archived: bool = False,
    limit: int = 50,
) -> tuple[list[dict[str, Any]], tuple[int, str, int] | None]:
    """Items newest first (or, with `after`, the next ones forward in time).

    `visible_to` is required: a caller decides whose private rows it may show (Cairn.reader);
    `agent` keeps the items of that agent's sessions.
    Returns (items, cursor for the next older page, or None at the end)."""
    db = as_db(conn)
    project_id: int | None = None
    if project is not None:
        project_id = projects.find(db, project)
        if project_id is None:
            return [], None
    edge: tuple[str, tuple[int, str, int]] | None = None
    if after is not None:
        edge = (">", after)
    elif before is not None:
        edge = ("<", before)
    parts: list[str] = []
    args: list[Any] = []
    for kind in _kinds_for(type_):
        sql, part_args = _part(
            db.dialect, kind, project_id, type_, agent, edge, include_archived, visible_to
        )
        parts.append(sql)
        args.extend(part_args)
        args.append(limit + 1)
    order = "ASC" if after is not None else "DESC"
    rows = db.execute(
        " UNION ALL ".join(parts) + f" ORDER BY at {order}, kind {order}, id {order} LIMIT ?",
        (*args, limit + 1),
    ).fetchall()
    items = [_row(r) for r in rows[:limit]]
    cursor = None
    if len(rows) > limit:
        last = items[-1]
        cursor = (int(last["at"]), str(last["kind"]), int(last["id"]))
    return items, cursor


def item(conn: AnyDb, kind: str, item_id: int, *, visible_to: str | None) -> dict[str, Any] | None:
    """One item of the stream; None if missing or a teammate's private one (as if missing)."""
    if kind not in KINDS:
        return None
    where, args = _visible(kind, visible_to)
    where.append(f"{_ALIAS[kind]}.id = ?")
    db = as_db(conn)
    sql = f"{_select(kind, db.dialect)} WHERE {' AND '.join(where)}"
    row = db.execute(sql, (*args, item_id)).fetchone()
    return _row(row) if row is not None else None


def encode_cursor(cursor: tuple[int, str, int] | None) -> str | None:
    return None if cursor is None else f"{cursor[0]}.{cursor[1]}.{cursor[2]}"


def decode_cursor(text: str | None) -> tuple[int, str, int] | None:
    """Parse 'ms.kind.id'; anything else means 'from the newest'."""
    if not text:
        return None
    parts = text.split(".")
    if len(parts) != 3 or parts[1] not in KINDS:
        return None
    if not (parts[0].isdigit() and parts[2].isdigit()) or len(parts[0]) > 16 or len(parts[2]) > 18:
        return None
    return int(parts[0]), parts[1], int(parts[2])


def embedding_coverage(conn: AnyDb) -> dict[str, Any]:
    """Embedded items vs items per kind (the table every embedder writes to)."""
    db = as_db(conn)
    tables = {"observation": "observations", "memory": "memories", "prompt": "prompts"}
    tables["summary"] = "summaries"
    out: dict[str, Any] = {}
    for kind, table in tables.items():
        total = int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        done = int(
            db.execute("SELECT COUNT(*) FROM embeddings WHERE item_kind = ?", (kind,)).fetchone()[0]
        )
        out[kind] = {"embedded": min(done, total), "total": total}
    return out


def retention_inputs(
    conn: AnyDb, table: str, sample: int
) -> list[tuple[int, int, int, str | None, int, int | None]]:
    """Decay inputs (importance, uses, pinned, type, anchor ms, project id) of live rows: all of
    them, or an even sample across the whole history when there are more than `sample`."""
    db = as_db(conn)
    total = int(db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0])
    stride = max(1, total // max(1, sample))
    greatest = db.dialect.greatest
    if table == "memories":
        anchor = greatest("COALESCE(updated_at, created_at)", "COALESCE(last_retrieved_at, 0)")
        sql = f"""SELECT importance, retrieval_count + hit_count, pinned, NULL, {anchor},
                 project_id FROM memories WHERE archived_at IS NULL AND id % ? = 0"""
    else:
        anchor = greatest("created_at", "COALESCE(last_retrieved_at, 0)", "COALESCE(kept_at, 0)")
        sql = f"""SELECT importance, retrieval_count, 0, type, {anchor},
                 project_id FROM observations WHERE archived_at IS NULL AND id % ? = 0"""
    return db.tuples(sql, (stride,))
