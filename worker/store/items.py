"""Searchable items of every kind (observation, memory, prompt, summary) in one dict shape, and
each item's neighbours in its thread: what search, the context builder and the embedder read.

Ported to the store's database edge (store/db.py): SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from worker.store.db import AnyDb, Row, as_db
from worker.store.m002_retrieval import KIND_CODES
from worker.store.rows import content_hash, load_json, ms

KINDS = tuple(KIND_CODES)
TABLES = {"observation": "observations", "memory": "memories", "prompt": "prompts",
          "summary": "summaries"}  # fmt: skip
Ref = tuple[str, int]

_TITLE_CHARS = 120


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1].rstrip() + "…"


def _summary_body(row: Row) -> str:
    parts = []
    for label, key in (
        ("Completed", "completed"),
        ("Learned", "learned"),
        ("Next", "next_steps"),
    ):
        value = (row[key] or "").strip()
        if value:
            parts.append(f"{label}: {value}")
    return "\n".join(parts)


PRIVATE_KINDS = ("observation", "prompt")
_ALIAS = {"observation": "o", "memory": "m", "prompt": "r", "summary": "s"}
_ITEM_SQL = {
    "observation": """SELECT o.id, o.project_id, p.key AS project, o.session_id, o.type,
        o.title, o.body, o.files, o.importance, 0 AS pinned, o.created_at, o.retrieval_count,
        o.archived_at, NULL AS superseded_by, NULL AS expires_at, o.content_hash, o.meta,
        o.author, o.shared
        FROM observations o JOIN projects p ON p.id = o.project_id WHERE {in_ids}""",
    "memory": """SELECT m.id, m.project_id, p.key AS project, m.session_id, m.kind AS type,
        m.tags, m.content, m.importance, m.pinned, m.created_at, m.retrieval_count,
        m.archived_at, m.superseded_by, m.expires_at, m.content_hash, m.meta
        FROM memories m LEFT JOIN projects p ON p.id = m.project_id WHERE {in_ids}""",
    "prompt": """SELECT r.id, r.project_id, p.key AS project, r.session_id, r.number, r.text,
        r.created_at, r.meta, r.author, r.shared FROM prompts r JOIN projects p ON p.id = r.project_id
        WHERE {in_ids}""",
    "summary": """SELECT s.id, s.project_id, p.key AS project, s.session_id, s.request,
        s.completed, s.learned, s.next_steps, s.files, s.updated_at AS created_at, s.meta
        FROM summaries s JOIN projects p ON p.id = s.project_id WHERE {in_ids}""",
}


def _item(kind: str, row: Row) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": kind,
        "id": int(row["id"]),
        "project_id": row["project_id"],
        "project": row["project"],
        "session_id": row["session_id"],
        "created_at": ms(row["created_at"], f"{TABLES[kind]}.created_at") or 0,
        "meta": load_json(row["meta"], field=f"{TABLES[kind]}.meta", kind=dict),
        "files": [],
        "importance": 2,
        "pinned": False,
        "retrieval_count": 0,
        "archived_at": None,
        "superseded_by": None,
        "expires_at": None,
        # Prompts and observations are private to their author on a team database unless
        # shared (store/privacy.py); memories and summaries are the team's.
        "author": row["author"] if kind in PRIVATE_KINDS else None,
        "shared": bool(row["shared"]) if kind in PRIVATE_KINDS else True,
    }
    if kind == "observation":
        base.update(
            type=row["type"],
            title=row["title"],
            body=row["body"],
            files=load_json(row["files"], [], field=f"{TABLES[kind]}.files"),
            importance=int(row["importance"]),
            retrieval_count=int(row["retrieval_count"]),
            archived_at=row["archived_at"],
            content_hash=row["content_hash"],
        )
    elif kind == "memory":
        content = row["content"]
        base.update(
            type=row["type"],
            title=_first_line(content),
            body=content,
            tags=load_json(row["tags"], [], field="memories.tags"),
            importance=int(row["importance"]),
            pinned=bool(row["pinned"]),
            retrieval_count=int(row["retrieval_count"]),
            archived_at=row["archived_at"],
            superseded_by=row["superseded_by"],
            expires_at=row["expires_at"],
            content_hash=row["content_hash"],
        )
    elif kind == "prompt":
        text = row["text"]
        base.update(
            type="prompt",
            title=_first_line(text),
            body=text,
            number=row["number"],
            content_hash=content_hash("prompt", " ".join(text.lower().split())),
        )
    else:
        body = _summary_body(row)
        base.update(
            type="summary",
            title=_first_line(row["request"] or "") or "Session summary",
            body=body,
            files=load_json(row["files"], [], field=f"{TABLES[kind]}.files"),
            importance=3,
            content_hash=content_hash("summary", row["request"] or "", body),
        )
    return base


def load_items(conn: AnyDb, refs: Iterable[Ref]) -> dict[Ref, dict[str, Any]]:
    """Items of any kind as one dict shape (title, body, importance, counters, flags...)."""
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        by_kind.setdefault(kind, []).append(item_id)
    db = as_db(conn)
    out: dict[Ref, dict[str, Any]] = {}
    for kind, ids in by_kind.items():
        # One parameter for all the ids (PostgreSQL: an array, one statement text whatever the
        # count, so it is prepared once; 180 observations at 300k items 9.6 -> 7.1 ms a query).
        sql = _ITEM_SQL[kind].format(in_ids=db.dialect.in_ids(f"{_ALIAS[kind]}.id"))
        for row in db.execute(sql, (db.dialect.ids_parameter(sorted(set(ids))),)):
            out[(kind, int(row["id"]))] = _item(kind, row)
    return out


def recent_memory_texts(conn: AnyDb, before_id: int, limit: int) -> list[tuple[int, str]]:
    """(id, content) of live, latest memories with an id below `before_id`, newest first (the
    clause cache warms from them: retrieval/clauses.py)."""
    rows = as_db(conn).execute(
        "SELECT id, content FROM memories WHERE id < ? AND archived_at IS NULL "
        "AND superseded_by IS NULL ORDER BY id DESC LIMIT ?",
        (before_id, limit),
    )
    return [(int(row["id"]), str(row["content"] or "")) for row in rows]


# ---------------------------------------------------------------- neighbours (same thread)
_THREAD = {
    "observation": ("observations", "session_id"),
    "memory": ("memories", "session_id"),
    "prompt": ("prompts", "session_id"),
}


def neighbours(
    conn: AnyDb, refs: Iterable[Ref], window_ms: int
) -> dict[Ref, tuple[Ref | None, Ref | None]]:
    """Each item's previous and next item of the same kind, project and session, written
    within `window_ms` of it: the conversation or task it belongs to."""
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        if kind in _THREAD:
            by_kind.setdefault(kind, []).append(item_id)
    db = as_db(conn)
    out: dict[Ref, tuple[Ref | None, Ref | None]] = {}
    # A planner setting for these statements only (the rest of the transaction plans as it
    # would have; a failed statement ends the transaction, and the setting with it).
    setting = db.dialect.thread_lookup_setting if by_kind else None
    if setting is not None:
        previous = db.execute(
            "SELECT current_setting(?), set_config(?, ?, true)", (setting[0], *setting)
        ).fetchone()[0]
    for kind, ids in by_kind.items():
        table, session = _THREAD[kind]
        # Row values, not `created_at < ? OR (created_at = ? AND id < ?)`: with ANALYZE statistics
        # the OR form made SQLite sort the whole session (14 ms a lookup in a 5k-row session).
        # The COALESCE defaults of PostgreSQL's thread indexes (pg/m004_search.py).
        same = " AND ".join(
            db.dialect.same_as(f"t.{c}", f"x.{c}", null)
            for c, null in (("project_id", "-1"), (session, "''"))
        )
        sql = f"""SELECT x.id,
            (SELECT t.id FROM {table} t WHERE {same} AND (t.created_at, t.id) < (x.created_at, x.id)
               AND t.created_at >= x.created_at - ? ORDER BY t.created_at DESC, t.id DESC LIMIT 1),
            (SELECT t.id FROM {table} t WHERE {same} AND (t.created_at, t.id) > (x.created_at, x.id)
               AND t.created_at <= x.created_at + ? ORDER BY t.created_at, t.id LIMIT 1)
            FROM {table} x WHERE {db.dialect.in_ids("x.id")}"""
        args = (window_ms, window_ms, db.dialect.ids_parameter(sorted(set(ids))))
        for row in db.execute(sql, args):
            out[(kind, int(row[0]))] = (
                (kind, int(row[1])) if row[1] is not None else None,
                (kind, int(row[2])) if row[2] is not None else None,
            )
    if setting is not None:
        db.execute("SELECT set_config(?, ?, true)", (setting[0], previous))
    return out
