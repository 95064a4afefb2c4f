"""Memories: curated knowledge (lessons, decisions, facts, preferences, notes), project or global.

Ported to the store's database edge (store/db.py): every function here runs on SQLite and on
PostgreSQL alike, its SQL written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.clock import now_ms
from worker.store import lifecycle, projects, received
from worker.store.db import AnyDb, Db, Row, as_db, same_value
from worker.store.keyword_terms import analyse
from worker.store.rows import (
    by_ids,
    dump_json,
    iso,
    load_json,
    newest_first_page,
    normalised_hash,
    placeholders,
)
from worker.terms import split_text

KINDS = ("lesson", "decision", "fact", "preference", "note")
# Which kind wins when two memories merge: decisions and preferences weigh most.
KIND_RANK = {"note": 0, "fact": 1, "lesson": 2, "preference": 3, "decision": 4}

COLUMNS = """m.id, m.project_id, p.key AS project, m.session_id, m.kind, m.content, m.content_hash,
    m.tags, m.importance, m.importance_auto, m.tags_auto, m.pinned, m.expires_at, m.created_at,
    m.updated_at, m.hit_count, m.retrieval_count, m.access_count, m.last_retrieved_at,
    m.archived_at, m.archive_reason, m.superseded_by, m.meta, m.dated, m.author"""
FROM = "FROM memories m LEFT JOIN projects p ON p.id = m.project_id"

# Columns a caller may change through `update`.
UPDATABLE = (
    "kind",
    "content",
    "content_hash",
    "tags",
    "importance",
    "importance_auto",
    "tags_auto",
    "pinned",
    "expires_at",
    "updated_at",
    "hit_count",
    "retrieval_count",
    "archived_at",
    "archive_reason",
    "superseded_by",
    "meta",
    "created_at",
    "dated",
)


def to_dict(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "project": row["project"],
        "scope": "project" if row["project_id"] is not None else "global",
        "session_id": row["session_id"],
        "kind": row["kind"],
        "content": row["content"],
        "content_hash": row["content_hash"],
        "tags": load_json(row["tags"], [], field="memories.tags"),
        "importance": row["importance"],
        "importance_scored": bool(row["importance_auto"]),
        "pinned": bool(row["pinned"]),
        "expires_at": iso(row, "expires_at"),
        "created_at": iso(row, "created_at"),
        "updated_at": iso(row, "updated_at"),
        "hit_count": row["hit_count"],
        "retrieval_count": row["retrieval_count"],
        "access_count": row["access_count"],
        "last_retrieved_at": iso(row, "last_retrieved_at"),
        "archived": row["archived_at"] is not None,
        "archived_at": iso(row, "archived_at"),
        "archive_reason": row["archive_reason"],
        "superseded_by": row["superseded_by"],
        "is_latest": row["superseded_by"] is None,
        "meta": load_json(row["meta"], field="memories.meta", kind=dict),
        "author": row["author"],
    }


def get_row(conn: AnyDb, memory_id: int) -> Row | None:
    row: Row | None = (
        as_db(conn).execute(f"SELECT {COLUMNS} {FROM} WHERE m.id = ?", (memory_id,)).fetchone()
    )
    return row


def get(conn: AnyDb, memory_id: int) -> dict[str, Any] | None:
    row = get_row(conn, memory_id)
    return to_dict(row) if row is not None else None


def get_many(conn: AnyDb, ids: list[int]) -> list[dict[str, Any]]:
    return by_ids(conn, f"SELECT {COLUMNS} {FROM}", "m.id", ids, to_dict)


def resolve_scope(conn: AnyDb, item: dict[str, Any]) -> int | None:
    """The project id for an item (created if new), or None for a global memory."""
    if item.get("scope") == "global" or not item.get("project"):
        return None
    return projects.ensure(conn, item["project"])


def find_same(conn: AnyDb, project_id: int | None, text_hash: str) -> Row | None:
    """An existing memory with the same normalised content in the same scope."""
    scope, args = same_value("m.project_id", project_id)
    row: Row | None = (
        as_db(conn)
        .execute(
            f"SELECT {COLUMNS} {FROM} WHERE {scope} AND m.content_hash = ? "
            "ORDER BY m.archived_at IS NOT NULL, m.id LIMIT 1",
            (*args, text_hash),
        )
        .fetchone()
    )
    return row


def index_text(content: str, tags_json: str | None) -> str:
    """A memory's words for a keyword index the writer fills (Dialect.writes_index_text): its
    text split as worker/terms.py splits it, plus the tag words the text lacks (as on SQLite,
    migration 2: tags mostly repeat the text, and counting them twice skews the ranking)."""
    text = split_text(content)
    have = set(text.split())
    extra = [word for word in split_text(tags_json).split() if word not in have]
    return " ".join([text, *dict.fromkeys(extra)]).strip()


def _write_index_text(db: Db, memory_id: int) -> None:
    row = db.execute("SELECT content, tags FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is not None:
        db.execute(
            "UPDATE memories SET search_text = ?, index_title = ?, index_body = ? WHERE id = ?",
            (index_text(row[0], row[1]), *analyse("memory", (row[0], row[1])), memory_id),
        )


def insert_row(conn: AnyDb, project_id: int | None, item: dict[str, Any]) -> int:
    """Insert one memory whose fields are all decided (see worker.memory.merge.save)."""
    db = as_db(conn)
    created = item.get("created_at_ms") or now_ms()
    tags = dump_json(item.get("tags") or [])
    columns = (
        "project_id, session_id, kind, content, content_hash, tags, importance, importance_auto, "
        "tags_auto, pinned, expires_at, created_at, updated_at, meta, dated, author"
    )
    values: tuple[Any, ...] = (
        project_id,
        item.get("session_id"),
        item["kind"],
        item["content"],
        normalised_hash(item["content"]),
        tags,
        int(item.get("importance") or 3),
        1 if item.get("importance_auto") else 0,
        1 if item.get("tags_auto") else 0,
        1 if item.get("pinned") else 0,
        item.get("expires_at_ms"),
        created,
        max(created, item.get("updated_at_ms") or created),
        dump_json(item.get("meta")),
        1 if item.get("created_at_ms") else 0,  # imported history carries its own date
        item.get("author"),
    )
    if db.dialect.writes_index_text:
        columns += ", search_text, index_title, index_body"
        values += (index_text(item["content"], tags), *analyse("memory", (item["content"], tags)))
    return db.insert(
        f"INSERT INTO memories({columns}) VALUES ({placeholders(len(values))})", values
    )


def insert(conn: AnyDb, item: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Store one memory as given; returns (row, created). Same content in the same scope merges.

    This is the plain storage step: prefer `worker.memory.merge.save`, which also scores
    importance, picks tags and detects supersession.
    """
    db = as_db(conn)
    seen = received.seen(db, item.get("event_id"))
    if seen is not None:
        row = get(db, int(seen))
        if row is not None:
            return row, False
    project_id = resolve_scope(db, item)
    same = find_same(db, project_id, normalised_hash(item["content"]))
    if same is not None:
        db.execute(
            "UPDATE memories SET hit_count = hit_count + 1, updated_at = ?, archived_at = NULL, "
            "archive_reason = NULL WHERE id = ?",
            (now_ms(), same["id"]),
        )
        memory_id = int(same["id"])
        created = False
    else:
        memory_id = insert_row(db, project_id, item)
        created = True
    received.record(db, item.get("event_id"), "memory", memory_id)
    row = get(db, memory_id)
    assert row is not None
    return row, created


def update(conn: AnyDb, memory_id: int, changes: dict[str, Any]) -> None:
    cols = [c for c in changes if c in UPDATABLE]
    if not cols:
        return
    db = as_db(conn)
    assignments = ", ".join(f"{c} = ?" for c in cols)
    db.execute(
        f"UPDATE memories SET {assignments} WHERE id = ?",
        (*(changes[c] for c in cols), memory_id),
    )
    if db.dialect.writes_index_text and ("content" in cols or "tags" in cols):
        _write_index_text(db, memory_id)


def drop_embedding(conn: AnyDb, kind: str, ids: list[int]) -> int:
    """Remove stored vectors (stale after an edit, or gone after a forget)."""
    if not ids:
        return 0
    cur = as_db(conn).execute(
        f"DELETE FROM embeddings WHERE item_kind = ? AND item_id IN ({placeholders(len(ids))})",
        (kind, *ids),
    )
    return cur.rowcount


def delete(conn: AnyDb, memory_id: int) -> dict[str, Any] | None:
    """Forget a memory for good: the row, its FTS entry (trigger), relations and vector."""
    db = as_db(conn)
    row = get(db, memory_id)
    if row is None:
        return None
    # Memories this one superseded become the latest again; the FK would null it anyway.
    db.execute("UPDATE memories SET superseded_by = NULL WHERE superseded_by = ?", (memory_id,))
    db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    lifecycle.forget_traces(db, "memory", [memory_id])
    return row


@dataclass(frozen=True)
class MemoryQuery:
    """Which memories a list shows (every filter optional), and which page of them."""

    project: str | None = None
    scope: str = "all"  # all | project | global
    include_global: bool = False  # with `project`: also the global memories
    kind: str | None = None
    pinned: bool | None = None
    importance_min: int | None = None
    include_archived: bool = False
    archived: bool | None = None  # True: only archived; False: only live
    latest_only: bool = False  # hide memories a newer one superseded
    text: str | None = None  # a substring of the content
    tag: str | None = None
    session_id: str | None = None
    before_id: int | None = None
    limit: int = 50


def list_page(conn: AnyDb, query: MemoryQuery) -> tuple[list[dict[str, Any]], int | None]:
    """Newest first with id-cursor pagination; returns (items, next cursor)."""
    db = as_db(conn)
    where: list[str] = []
    args: list[Any] = []
    if query.scope == "global":
        where.append("m.project_id IS NULL")
    elif query.project is not None:
        pid = projects.find(db, query.project)
        if pid is None and not query.include_global:
            return [], None
        scope, scope_args = same_value("m.project_id", pid)
        # A project's list may also show the global memories that apply to it.
        where.append(f"({scope} OR m.project_id IS NULL)" if query.include_global else scope)
        args.extend(scope_args)
    elif query.scope == "project":
        where.append("m.project_id IS NOT NULL")
    if query.kind is not None:
        where.append("m.kind = ?")
        args.append(query.kind)
    if query.pinned is not None:
        where.append("m.pinned = ?")
        args.append(1 if query.pinned else 0)
    if query.importance_min is not None:
        where.append("m.importance >= ?")
        args.append(query.importance_min)
    if query.archived is True:
        where.append("m.archived_at IS NOT NULL")
    elif query.archived is False or not query.include_archived:
        where.append("m.archived_at IS NULL")
    if query.latest_only:
        where.append("m.superseded_by IS NULL")
    if query.text:
        where.append(db.dialect.contains("lower(m.content)"))
        args.append(query.text.lower())
    if query.tag:
        tags = db.dialect.json_array_values("m.tags", "t")
        where.append(f"EXISTS (SELECT 1 FROM {tags} WHERE lower(t.value) = ?)")
        args.append(query.tag.lower())
    if query.session_id is not None:
        where.append("m.session_id = ?")
        args.append(query.session_id)
    return newest_first_page(
        db,
        f"SELECT {COLUMNS} {FROM}",
        where,
        args,
        id_column="m.id",
        before_id=query.before_id,
        limit=query.limit,
        to_dict=to_dict,
    )


def live_in_scope(conn: AnyDb, project_id: int | None) -> list[Row]:
    """Live (not archived, not superseded) memories of one scope, oldest first."""
    scope, args = same_value("m.project_id", project_id)
    return (
        as_db(conn)
        .execute(
            f"SELECT {COLUMNS} {FROM} WHERE {scope} AND m.archived_at IS NULL "
            "AND m.superseded_by IS NULL ORDER BY m.id",
            args,
        )
        .fetchall()
    )


def live_rows(conn: AnyDb, project_id: int | None, ids: list[int]) -> list[Row]:
    """The live, latest memories of one scope among `ids`."""
    if not ids:
        return []
    scope, args = same_value("m.project_id", project_id)
    return (
        as_db(conn)
        .execute(
            f"SELECT {COLUMNS} {FROM} WHERE m.id IN ({placeholders(len(ids))}) "
            f"AND {scope} AND m.archived_at IS NULL AND m.superseded_by IS NULL",
            (*ids, *args),
        )
        .fetchall()
    )


def text_candidates(
    conn: AnyDb,
    project_id: int | None,
    words: list[str],
    *,
    exclude_id: int,
    limit: int = 12,
    per_word: int = 60,
) -> list[Row]:
    """Live memories of the same scope sharing the most of `words` (the keyword index: FTS5 on
    SQLite, full-text search on PostgreSQL), most shared first.

    Each word is looked up alone, newest first, at most `per_word` rows: a common word cannot
    make one save scan (and score) every memory of the project.
    """
    db = as_db(conn)
    source, match, newest = db.dialect.memory_word_match()
    scope, scope_args = same_value("m.project_id", project_id)
    sql = (
        f"SELECT m.id FROM {source} WHERE {match} AND {scope} AND m.archived_at IS NULL "
        f"AND m.superseded_by IS NULL AND m.id != ? ORDER BY {newest} LIMIT ?"
    )
    counts: dict[int, int] = {}
    for word in words[:32]:
        if not word.replace("_", "").replace("-", "").replace(".", "").isalnum():
            continue
        args = (*db.dialect.word_parameters(word), *scope_args, exclude_id, per_word)
        for row in db.execute(sql, args):
            counts[int(row[0])] = counts.get(int(row[0]), 0) + 1
    best = sorted(counts, key=lambda i: (-counts[i], -i))[:limit]
    if not best:
        return []
    rows = {
        int(r["id"]): r
        for r in db.execute(
            f"SELECT {COLUMNS} {FROM} WHERE m.id IN ({placeholders(len(best))})", best
        )
    }
    return [rows[i] for i in best if i in rows]
