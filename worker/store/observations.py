"""Observations: what happened in a session (tool use turned into a typed, titled record).

Ported to the store's database edge (store/db.py): every function here runs on SQLite and on
PostgreSQL alike, its SQL written once. On a team database observations are private to their
author unless shared: a list given `visible_to` shows only those (store/privacy.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from worker.clock import now_ms
from worker.store import privacy, projects, received, sessions
from worker.store.db import AnyDb, Db, Row, as_db
from worker.store.keyword_terms import analyse
from worker.store.m002_retrieval import KIND_CODES
from worker.store.rows import (
    by_ids,
    content_hash,
    dump_json,
    insert_values,
    iso,
    load_json,
    newest_first_page,
)
from worker.store.sql_terms import batch_indexing
from worker.terms import index_text, split_text

TYPES = (
    "file_write", "command", "research", "web", "delegation", "mcp", "note", "answer", "other"
)  # fmt: skip

COLUMNS = """o.id, o.session_id, o.project_id, p.key AS project, o.type, o.title, o.body, o.files,
    o.tool_name, o.content_hash, o.importance, o.created_at, o.retrieval_count, o.access_count,
    o.last_retrieved_at, o.archived_at, o.meta, o.author, o.shared"""
FROM = "FROM observations o JOIN projects p ON p.id = o.project_id"


def to_dict(row: Row | Mapping[str, Any]) -> dict[str, Any]:
    """The API dict of a stored row (a read row, or the columns insert_many just wrote)."""
    return {
        "id": row["id"],
        "session_id": row["session_id"],
        "project": row["project"],
        "type": row["type"],
        "title": row["title"],
        "body": row["body"],
        "files": load_json(row["files"], [], field="observations.files"),
        "tool_name": row["tool_name"],
        "content_hash": row["content_hash"],
        "importance": row["importance"],
        "created_at": iso(row, "created_at"),
        "retrieval_count": row["retrieval_count"],
        "access_count": row["access_count"],
        "last_retrieved_at": iso(row, "last_retrieved_at"),
        "archived": row["archived_at"] is not None,
        "archived_at": iso(row, "archived_at"),
        "meta": load_json(row["meta"], field="observations.meta", kind=dict),
        "author": row["author"],
        # Seen by the whole team on a team database (else only by its author): store/privacy.py.
        "shared": bool(row["shared"]),
    }


def insert(conn: AnyDb, item: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Insert one validated observation; returns (row, created). A repeated event_id is a no-op."""
    return insert_many(conn, [item])[0]


def insert_many(conn: AnyDb, items: list[dict[str, Any]]) -> list[tuple[dict[str, Any], bool]]:
    """Insert validated observations in order; (row, created) for each. Repeated event_ids
    (in earlier requests or earlier in this batch) are no-ops returning the stored row.

    The statements are per call, not per row (one multi-row INSERT per table): every
    statement releases and retakes Python's GIL, which the event loop holds most of the time
    under load, so a writer issuing one per row waited for it again and again. New rows are
    answered from the values written (a test checks they equal a read-back).

    Ids are MAX(id) + 1 onward, chosen here: writes are serialised (on PostgreSQL across every
    worker of the database too), so no other writer can take them meanwhile."""
    db = as_db(conn)
    by_event = _stored_for_events(db, [e for item in items if (e := item.get("event_id"))])
    next_id = int(db.execute("SELECT COALESCE(MAX(id), 0) FROM observations").fetchone()[0])
    refs: list[tuple[int, bool]] = []
    written: list[dict[str, Any]] = []  # the columns of each new row
    events: list[tuple[str | None, int]] = []
    project_ids: dict[str, int] = {}
    session_projects: dict[str, int] = {}
    session_authors = sessions.authors(
        db, [sid for item in items if not item.get("author") and (sid := item.get("session_id"))]
    )
    for item in items:
        event_id = item.get("event_id")
        if event_id and event_id in by_event:
            refs.append((by_event[event_id], False))
            continue
        key = item["project"]
        project_id = project_ids.get(key)
        if project_id is None:
            project_id = project_ids[key] = projects.ensure(db, key)
        session_id = item.get("session_id") or None
        author = (
            item.get("author")
            or (session_authors.get(session_id) if session_id else None)
            or item.get("default_author")
        )
        if session_id is not None:
            session_projects.setdefault(session_id, project_id)
            session_authors.setdefault(session_id, author)
        next_id += 1
        if event_id:
            by_event[event_id] = next_id
        events.append((event_id, next_id))
        written.append(_new_columns(next_id, item, project_id, session_id, author))
        refs.append((next_id, True))
    if written:
        sessions.ensure_many(db, session_projects, session_authors)
        if db.dialect.writes_index_text:
            _insert(db, written, with_index_text=True)
            catch_up = db.dialect.id_sequence_catch_up("observations")
            if catch_up is not None:
                db.execute(catch_up)
        else:
            with batch_indexing(db):
                _insert(db, written, with_index_text=False)
                _index(db, written)
        received.record_many(db, [(e, "observation", i) for e, i in events])
    # New rows are answered from the columns written, through the same to_dict as reads.
    rows = {columns["id"]: to_dict(columns) for columns in written}
    earlier = sorted({row_id for row_id, created in refs if not created} - rows.keys())
    rows.update((row["id"], row) for row in get_many(db, earlier))
    return [(rows[row_id], created) for row_id, created in refs]


# The columns insert_many writes; the others keep their defaults (counters 0, not archived).
INSERTED = (
    "id",
    "session_id",
    "project_id",
    "type",
    "title",
    "body",
    "files",
    "tool_name",
    "content_hash",
    "importance",
    "created_at",
    "meta",
    "author",
    "shared",
)
# The keyword index's words, where the writer fills them (Dialect.writes_index_text).
# And the worker's analysed terms (migration 6), as SQLite's search_index holds them.
INDEX_TEXT = ("search_title", "search_text", "index_title", "index_body")


def _insert(db: Db, written: list[dict[str, Any]], *, with_index_text: bool) -> None:
    names = INSERTED + INDEX_TEXT if with_index_text else INSERTED
    rows = [tuple(columns[name] for name in INSERTED) for columns in written]
    if with_index_text:
        rows = [
            (
                *row,
                split_text(columns["title"]),
                split_text(columns["body"], columns["files"]),
                *analyse("observation", (columns["title"], columns["body"], columns["files"])),
            )
            for row, columns in zip(rows, written, strict=True)
        ]
    insert_values(
        db,
        f"INSERT INTO observations({', '.join(names)})",
        f"({','.join('?' * len(names))})",
        rows,
    )


def _new_columns(
    new_id: int, item: dict[str, Any], project_id: int, session_id: str | None, author: str | None
) -> dict[str, Any]:
    """A new row's columns as stored (plus its project key and default counters, for to_dict)."""
    files = item.get("files") or []
    body = item.get("body") or ""
    return {
        "id": new_id,
        "session_id": session_id,
        "project_id": project_id,
        "project": item["project"],
        "type": item["type"],
        "title": item["title"],
        "body": body,
        "files": dump_json(files),
        "tool_name": item.get("tool_name"),
        "content_hash": content_hash(item["type"], item["title"], body, "\n".join(files)),
        "importance": item.get("importance") or 2,
        "created_at": item.get("created_at_ms") or now_ms(),
        "retrieval_count": 0,
        "access_count": 0,
        "last_retrieved_at": None,
        "archived_at": None,
        "meta": dump_json(item.get("meta")),
        "author": author,
        "shared": 1 if item.get("shared") else 0,
    }


def _stored_for_events(db: Db, event_ids: list[str]) -> dict[str, int]:
    """The observations earlier deliveries of these event ids created (if they still exist)."""
    if not event_ids:
        return {}
    # The CASE keeps PostgreSQL from casting another kind's item id (which need not be a
    # number) before the kind is checked; SQLite's CAST never fails.
    rows = db.execute(
        f"""SELECT r.event_id, o.id FROM received_events r
           JOIN observations o
             ON o.id = CAST(CASE WHEN r.kind = 'observation' THEN r.item_id END AS BIGINT)
           WHERE r.kind = 'observation' AND {db.dialect.in_ids("r.event_id")}""",
        (db.dialect.ids_parameter(sorted(set(event_ids))),),
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def _index(conn: AnyDb, written: list[dict[str, Any]]) -> None:
    """Add new observations to the keyword index (migration 9 explains why this is not the
    trigger): the same columns as the m002 update trigger writes."""
    code = KIND_CODES["observation"]
    insert_values(
        conn,
        "INSERT INTO search_index(rowid, title, body, scope, kind, item_id, project_id)",
        "(?,?,?,?,'observation',?,?)",
        [
            (
                row["id"] * 8 + code,
                index_text(row["title"]),
                index_text(row["body"], row["files"]),
                f"kobservation p{row['project_id']}",
                row["id"],
                row["project_id"],
            )
            for row in written
        ],
    )


def get(conn: AnyDb, observation_id: int) -> dict[str, Any] | None:
    row = (
        as_db(conn).execute(f"SELECT {COLUMNS} {FROM} WHERE o.id = ?", (observation_id,)).fetchone()
    )
    return to_dict(row) if row is not None else None


def get_many(conn: AnyDb, ids: list[int]) -> list[dict[str, Any]]:
    return by_ids(conn, f"SELECT {COLUMNS} {FROM}", "o.id", ids, to_dict)


@dataclass(frozen=True)
class ObservationQuery:
    """Which observations a list shows (every filter optional), and which page of them."""

    project: str | None = None
    session_id: str | None = None
    type_: str | None = None
    since: int | None = None  # epoch ms, inclusive
    until: int | None = None  # epoch ms, exclusive
    include_archived: bool = False
    # On a team database: only the observations shared or written by this author (None: all).
    visible_to: str | None = None
    before_id: int | None = None
    limit: int = 50


def list_page(conn: AnyDb, query: ObservationQuery) -> tuple[list[dict[str, Any]], int | None]:
    """Newest first with id-cursor pagination; returns (items, next cursor)."""
    where: list[str] = []
    args: list[Any] = []
    if query.project is not None:
        pid = projects.find(conn, query.project)
        if pid is None:
            return [], None
        where.append("o.project_id = ?")
        args.append(pid)
    if query.session_id is not None:
        where.append("o.session_id = ?")
        args.append(query.session_id)
    if query.type_ is not None:
        where.append("o.type = ?")
        args.append(query.type_)
    if query.since is not None:
        where.append("o.created_at >= ?")
        args.append(query.since)
    if query.until is not None:
        where.append("o.created_at < ?")
        args.append(query.until)
    if not query.include_archived:
        where.append("o.archived_at IS NULL")
    if query.visible_to is not None:
        visible, visible_args = privacy.shared_or_by("o", query.visible_to)
        where.append(visible)
        args.extend(visible_args)
    return newest_first_page(
        conn,
        f"SELECT {COLUMNS} {FROM}",
        where,
        args,
        id_column="o.id",
        before_id=query.before_id,
        limit=query.limit,
        to_dict=to_dict,
    )
