"""Observations: what happened in a session (tool use turned into a typed, titled record)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from worker.clock import now_ms, to_iso
from worker.store import projects, received, sessions
from worker.store.m002_retrieval import KIND_CODES
from worker.store.rows import by_ids, content_hash, dump_json, iso, load_json, placeholders
from worker.store.terms import batch_indexing, index_text

TYPES = ("file_write", "command", "research", "web", "delegation", "mcp", "note", "other")

COLUMNS = """o.id, o.session_id, o.project_id, p.key AS project, o.type, o.title, o.body, o.files,
    o.tool_name, o.content_hash, o.importance, o.created_at, o.retrieval_count, o.access_count,
    o.last_retrieved_at, o.archived_at, o.meta"""
FROM = "FROM observations o JOIN projects p ON p.id = o.project_id"


def to_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "session_id": row["session_id"],
        "project": row["project"],
        "type": row["type"],
        "title": row["title"],
        "body": row["body"],
        "files": load_json(row["files"], []),
        "tool_name": row["tool_name"],
        "content_hash": row["content_hash"],
        "importance": row["importance"],
        "created_at": iso(row, "created_at"),
        "retrieval_count": row["retrieval_count"],
        "access_count": row["access_count"],
        "last_retrieved_at": iso(row, "last_retrieved_at"),
        "archived": row["archived_at"] is not None,
        "archived_at": iso(row, "archived_at"),
        "meta": load_json(row["meta"]),
    }


def insert(conn: sqlite3.Connection, item: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Insert one validated observation; returns (row, created). A repeated event_id is a no-op."""
    return insert_many(conn, [item])[0]


def insert_many(
    conn: sqlite3.Connection, items: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], bool]]:
    """Insert validated observations in order; (row, created) for each. Repeated event_ids
    (in earlier requests or earlier in this batch) are no-ops returning the stored row."""
    by_event = _stored_for_events(conn, [e for item in items if (e := item.get("event_id"))])
    with batch_indexing(conn):
        refs, fresh, written_rows = _insert_rows(conn, items, by_event)
        _index(conn, fresh)
    received.record_many(
        conn, [(item.get("event_id"), "observation", new_id) for new_id, _, item in fresh]
    )
    # New rows are answered from what was just written (no read back); only the earlier rows
    # a repeated event id points to are read.
    rows = {row["id"]: row for row in written_rows}
    earlier = sorted({row_id for row_id, created in refs if not created} - rows.keys())
    rows.update((row["id"], row) for row in get_many(conn, earlier))
    return [(rows[row_id], created) for row_id, created in refs]


def _insert_rows(
    conn: sqlite3.Connection, items: list[dict[str, Any]], by_event: dict[str, int]
) -> tuple[list[tuple[int, bool]], list[tuple[int, int, dict[str, Any]]], list[dict[str, Any]]]:
    """Insert the items not yet received: ((id, created) per item, (id, project, item) and
    the API dict per new row). `by_event` learns the new rows' event ids (a batch may repeat
    one)."""
    refs: list[tuple[int, bool]] = []
    fresh: list[tuple[int, int, dict[str, Any]]] = []
    written: list[dict[str, Any]] = []
    project_ids: dict[str, int] = {}
    known_sessions: set[str] = set()
    for item in items:
        event_id = item.get("event_id")
        if event_id and event_id in by_event:
            refs.append((by_event[event_id], False))
            continue
        key = item["project"]
        project_id = project_ids.get(key)
        if project_id is None:
            project_id = project_ids[key] = projects.ensure(conn, key)
        session_id = item.get("session_id")
        if session_id and session_id not in known_sessions:
            sessions.ensure(conn, session_id, project_id)
            known_sessions.add(session_id)
        row = _insert_row(conn, item, project_id, session_id)
        new_id = row["id"]
        if event_id:
            by_event[event_id] = new_id
        fresh.append((new_id, project_id, item))
        written.append(row)
        refs.append((new_id, True))
    return refs, fresh, written


def _stored_for_events(conn: sqlite3.Connection, event_ids: list[str]) -> dict[str, int]:
    """The observations earlier deliveries of these event ids created (if they still exist)."""
    if not event_ids:
        return {}
    rows = conn.execute(
        """SELECT r.event_id, o.id FROM received_events r
           JOIN observations o ON o.id = CAST(r.item_id AS INTEGER)
           WHERE r.kind = 'observation' AND r.event_id IN (SELECT value FROM json_each(?))""",
        (json.dumps(sorted(set(event_ids))),),
    )
    return {str(r[0]): int(r[1]) for r in rows}


def _index(conn: sqlite3.Connection, fresh: list[tuple[int, int, dict[str, Any]]]) -> None:
    """Add new observations to the keyword index in one statement (migration 9 explains why
    this is not a trigger). The same columns as the m002 update trigger writes."""
    code = KIND_CODES["observation"]
    conn.executemany(
        "INSERT INTO search_index(rowid, title, body, scope, kind, item_id, project_id) "
        "VALUES (?, ?, ?, ?, 'observation', ?, ?)",
        [
            (
                new_id * 8 + code,
                index_text(item["title"]),
                index_text(item.get("body") or "", dump_json(item.get("files") or [])),
                f"kobservation p{project_id}",
                new_id,
                project_id,
            )
            for new_id, project_id, item in fresh
        ],
    )


def _insert_row(
    conn: sqlite3.Connection, item: dict[str, Any], project_id: int, session_id: str | None
) -> dict[str, Any]:
    """Insert one row; its API dict, built from the values written (equal to `to_dict` of the
    row read back, which a test checks), so a new row is never read again."""
    files = item.get("files") or []
    body = item.get("body") or ""
    files_json = dump_json(files)
    meta_json = dump_json(item.get("meta"))
    digest = content_hash(item["type"], item["title"], body, "\n".join(files))
    importance = item.get("importance") or 2
    created = item.get("created_at_ms") or now_ms()
    cur = conn.execute(
        "INSERT INTO observations(session_id, project_id, type, title, body, files, tool_name, "
        "content_hash, importance, created_at, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            session_id,
            project_id,
            item["type"],
            item["title"],
            body,
            files_json,
            item.get("tool_name"),
            digest,
            importance,
            created,
            meta_json,
        ),
    )
    return {
        "id": int(cur.lastrowid or 0),
        "session_id": session_id,
        "project": item["project"],
        "type": item["type"],
        "title": item["title"],
        "body": body,
        "files": list(files),
        "tool_name": item.get("tool_name"),
        "content_hash": digest,
        "importance": importance,
        "created_at": to_iso(created),
        "retrieval_count": 0,
        "access_count": 0,
        "last_retrieved_at": None,
        "archived": False,
        "archived_at": None,
        "meta": load_json(meta_json),
    }


def get(conn: sqlite3.Connection, observation_id: int) -> dict[str, Any] | None:
    row = conn.execute(f"SELECT {COLUMNS} {FROM} WHERE o.id = ?", (observation_id,)).fetchone()
    return to_dict(row) if row is not None else None


def get_many(conn: sqlite3.Connection, ids: list[int]) -> list[dict[str, Any]]:
    return by_ids(conn, f"SELECT {COLUMNS} {FROM}", "o.id", ids, to_dict)


def list_page(
    conn: sqlite3.Connection,
    *,
    project: str | None = None,
    session_id: str | None = None,
    type_: str | None = None,
    since: int | None = None,
    until: int | None = None,
    before_id: int | None = None,
    include_archived: bool = False,
    limit: int = 50,
) -> tuple[list[dict[str, Any]], int | None]:
    """Newest first with id-cursor pagination; returns (items, next cursor)."""
    where: list[str] = []
    args: list[Any] = []
    if project is not None:
        pid = projects.find(conn, project)
        if pid is None:
            return [], None
        where.append("o.project_id = ?")
        args.append(pid)
    if session_id is not None:
        where.append("o.session_id = ?")
        args.append(session_id)
    if type_ is not None:
        where.append("o.type = ?")
        args.append(type_)
    if since is not None:
        where.append("o.created_at >= ?")
        args.append(since)
    if until is not None:
        where.append("o.created_at < ?")
        args.append(until)
    if before_id is not None:
        where.append("o.id < ?")
        args.append(before_id)
    if not include_archived:
        where.append("o.archived_at IS NULL")
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    rows = conn.execute(
        f"SELECT {COLUMNS} {FROM} {clause} ORDER BY o.id DESC LIMIT ?", (*args, limit + 1)
    ).fetchall()
    items = [to_dict(r) for r in rows[:limit]]
    cursor = int(rows[limit - 1]["id"]) if len(rows) > limit else None
    return items, cursor


def count_access(conn: sqlite3.Connection, ids: list[int]) -> None:
    """A person or tool opened these items (not a retrieval; see retrieval counters)."""
    if ids:
        conn.execute(
            f"UPDATE observations SET access_count = access_count + 1 "
            f"WHERE id IN ({placeholders(len(ids))})",
            ids,
        )
