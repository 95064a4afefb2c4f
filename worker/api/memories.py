"""Memories: create (scored, tagged, merged, superseding), list, get, edit, archive, forget, relations."""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from typing import Any

import anyio.to_thread

from worker.api.endpoint import Call, Endpoint, with_status
from worker.clock import now_ms, parse_iso
from worker.errors import BadRequest, Conflict, NotFound
from worker.memory import importance as importance_mod
from worker.memory.decay import ActivityClock, DecayPolicy, memory_retention
from worker.memory.kind import infer_kind
from worker.memory.merge import save, wants_supersession
from worker.memory.relations import RELATION_KINDS, chain
from worker.memory.tags import normalise_tags, pick_tags
from worker.ops.fields import (
    DATETIME,
    EVENT_ID,
    NEW_SESSION_ID,
    SESSION_ID,
    int_cursor,
    meta_field,
    page_query,
    parse_ids,
    project_field,
    text_field,
    time_ms,
)
from worker.schema import Schema
from worker.settings import Settings
from worker.store import memories as q
from worker.store import projects
from worker.store import relations as rq
from worker.store.rows import dump_json, normalised_hash

TAG = "memories"


_ISO_OR_NULL: Schema = {"type": ["string", "null"]}
MEMORY: Schema = {
    "type": "object",
    "required": ["id", "kind", "content", "importance", "scope", "created_at"],
    "properties": {
        "id": {"type": "integer"},
        "project": {"type": ["string", "null"]},
        "scope": {"type": "string", "enum": ["project", "global"]},
        "session_id": {"type": ["string", "null"]},
        "kind": {"type": "string", "enum": list(q.KINDS)},
        "content": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "importance": {"type": "integer", "minimum": 1, "maximum": 5},
        "importance_scored": {"type": "boolean"},
        "pinned": {"type": "boolean"},
        "expires_at": _ISO_OR_NULL,
        "created_at": {"type": "string"},
        "updated_at": {"type": "string"},
        "hit_count": {"type": "integer"},
        "retrieval_count": {"type": "integer"},
        "access_count": {"type": "integer"},
        "last_retrieved_at": _ISO_OR_NULL,
        "archived": {"type": "boolean"},
        "archived_at": _ISO_OR_NULL,
        "archive_reason": {"type": ["string", "null"]},
        "superseded_by": {"type": ["integer", "null"]},
        "is_latest": {"type": "boolean"},
        "retention": {"type": "number", "minimum": 0, "maximum": 1},
        "meta": {"type": ["object", "null"]},
    },
}


@lru_cache(maxsize=8)
def policy_for(settings: Settings) -> DecayPolicy:
    return DecayPolicy.from_settings(settings)


def with_retention(
    row: dict[str, Any], policy: DecayPolicy, clock: ActivityClock, scope: int | None
) -> dict[str, Any]:
    """The row plus its current retention: 1.0 fresh, lower the more its project was worked on
    since (a ranking signal: nothing is archived for a low retention)."""
    # A stored time that is not a number reads as None (reported once): count from now.
    anchor = parse_iso(row["updated_at"]) if row["updated_at"] else clock.now_ms
    if row["last_retrieved_at"]:
        anchor = max(anchor, parse_iso(row["last_retrieved_at"]))
    value = memory_retention(
        policy,
        importance=row["importance"],
        reinforcements=row["retrieval_count"] + row["hit_count"],
        pinned=row["pinned"],
        age_ms=clock.age_of(scope, anchor),
    )
    return {**row, "retention": round(value, 4)}


async def _out(call: Call, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    policy = policy_for(call.cairn.settings)
    now = now_ms()
    keys = sorted({r["project"] for r in rows if r["project"] is not None})

    def read(conn: sqlite3.Connection) -> tuple[dict[str, int], ActivityClock]:
        found = {k: projects.find(conn, k) for k in keys}
        ids = {k: pid for k, pid in found.items() if pid is not None}
        scopes: list[int | None] = [*ids.values()]
        if any(r["project"] is None for r in rows):
            scopes.append(None)
        return ids, ActivityClock.load(conn, scopes, now)

    ids, clock = await call.cairn.store.read(read)
    return [with_retention(r, policy, clock, ids.get(r["project"] or "")) for r in rows]


def _tags_field(s: Settings) -> Schema:
    return {
        "type": "array",
        "maxItems": s.max_tags,
        "items": {"type": "string", "minLength": 1, "maxLength": 64},
    }


def create_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "required": ["content"],
        "properties": {
            "kind": {
                "type": "string",
                "enum": list(q.KINDS),
                "description": "Optional. When absent it is inferred from the text: "
                "'decided'/'we use' -> decision, 'learned'/'turns out' -> lesson, "
                "'prefer'/'always'/'never' -> preference, anything else -> fact.",
            },
            "content": text_field(s, min_length=1),
            "project": project_field(s),
            "scope": {
                "type": "string",
                "enum": ["project", "global"],
                "description": "global: applies to every project (the project field is ignored).",
            },
            "importance": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": 5,
                "description": "1..5; scored from the text when absent. A given value always wins.",
            },
            "tags": _tags_field(s),
            "pinned": {"type": "boolean"},
            "expires_at": DATETIME,
            "created_at": DATETIME,
            "session_id": NEW_SESSION_ID,
            "event_id": EVENT_ID,
            "meta": meta_field(s),
            "supersede": {
                "type": "boolean",
                "description": "Check whether this memory replaces an older one (default: true, "
                "false for imports that carry created_at).",
            },
        },
    }


def _item(body: dict[str, Any]) -> dict[str, Any]:
    if not body["content"].strip():
        raise BadRequest("'content' must not be blank", field="content")
    scope = body.get("scope") or ("project" if body.get("project") else None)
    if scope is None:
        raise BadRequest(
            "'project' is required (or set 'scope' to 'global' for a memory that applies "
            "everywhere)",
            field="project",
        )
    if scope == "project" and not body.get("project"):
        raise BadRequest("'project' is required when 'scope' is 'project'", field="project")
    item = dict(body)
    item["scope"] = scope
    item["kind"] = body.get("kind") or infer_kind(body["content"])
    item["created_at_ms"] = time_ms(body, "created_at")
    item["expires_at_ms"] = time_ms(body, "expires_at")
    return item


async def similar_memories(call: Call, item: dict[str, Any]) -> dict[int, float]:
    """Cosine of this text with the scope's memories, when the embedding model is loaded.

    Lets supersession find a paraphrased update ("we upgraded the DB to Postgres 16") that shares
    too few words with the old memory for the lexical check. Empty when embeddings are off.
    """
    s = call.cairn.settings
    service = call.cairn.embeddings
    if not wants_supersession(item, s):
        return {}
    if service is None or not service.ready:
        return {}
    vector = await anyio.to_thread.run_sync(service.embed_query, item["content"])
    if vector is None:
        return {}
    project_id: int | None = None
    if item["scope"] == "project":
        project_id = await call.cairn.store.read(lambda c: projects.find(c, item["project"]))
        if project_id is None:
            return {}
    hits = service.search(vector, project_id=project_id, kinds=["memory"], limit=10)
    return {int(ref[1]): float(score) for ref, score in hits}


async def create_memory(call: Call) -> Any:
    item = _item(call.body)
    settings = call.cairn.settings
    similar = await similar_memories(call, item)
    saved = await call.cairn.store.write(lambda conn: save(conn, item, settings, similar))
    superseded = await call.cairn.store.read(lambda c: q.get_many(c, saved.superseded))
    cairn = call.cairn
    if saved.created:
        cairn.events.publish("memory.created", saved.row)
        cairn.after_items("memory", [saved.row["id"]])
    elif saved.merged:
        cairn.events.publish("memory.updated", saved.row)
        if saved.retagged:
            cairn.after_items("memory", [saved.row["id"]])
    for old in superseded:
        cairn.events.publish("memory.updated", old)
    row = (await _out(call, [saved.row]))[0]
    payload = {
        **row,
        "created": saved.created,
        "merged": saved.merged,
        "duplicate": not saved.created,
        "supersedes": saved.superseded,
    }
    return with_status(payload, 201 if saved.created else 200)


def list_query(s: Settings) -> dict[str, Schema]:
    return {
        "project": project_field(s),
        "scope": {"type": "string", "enum": ["all", "project", "global"]},
        "include_global": {"type": "boolean"},
        "kind": {"type": "string", "enum": list(q.KINDS)},
        "pinned": {"type": "boolean"},
        "importance_min": {"type": "integer", "minimum": 1, "maximum": 5},
        "include_archived": {"type": "boolean"},
        "archived": {"type": "boolean", "description": "true: only archived; false: only live"},
        "latest_only": {"type": "boolean", "description": "Hide memories a newer one superseded"},
        "q": {"type": "string", "maxLength": 1000, "description": "Substring of the content"},
        "tag": {"type": "string", "maxLength": 64},
        "session_id": SESSION_ID,
        "ids": {"type": "string", "maxLength": 10000, "description": "Comma-separated ids"},
        **page_query(s),
    }


async def list_memories(call: Call) -> Any:
    s = call.cairn.settings
    qp = call.query
    if "ids" in qp:
        ids = parse_ids(qp["ids"], s.max_page_size)
        items = await call.cairn.store.read(lambda c: q.get_many(c, ids))
        return {"items": await _out(call, items), "next_cursor": None}
    items, cursor = await call.cairn.store.read(
        lambda c: q.list_page(
            c,
            project=qp.get("project"),
            scope=qp.get("scope", "all"),
            include_global=qp.get("include_global", False),
            kind=qp.get("kind"),
            pinned=qp.get("pinned"),
            importance_min=qp.get("importance_min"),
            include_archived=qp.get("include_archived", False),
            archived=qp.get("archived"),
            latest_only=qp.get("latest_only", False),
            text=qp.get("q"),
            tag=qp.get("tag"),
            session_id=qp.get("session_id"),
            before_id=int_cursor(qp.get("cursor")),
            limit=qp.get("limit", s.page_size),
        )
    )
    return {"items": await _out(call, items), "next_cursor": str(cursor) if cursor else None}


def _missing(memory_id: int) -> NotFound:
    return NotFound(f"memory {memory_id} does not exist", field="id")


async def get_memory(call: Call) -> Any:
    mid = call.path["id"]
    row = await call.cairn.store.read(lambda c: q.get(c, mid))
    if row is None:
        raise _missing(mid)
    out = (await _out(call, [row]))[0]
    out["importance_signals"] = importance_mod.signals(row["content"], row["kind"])
    return out


def patch_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": list(q.KINDS)},
            "content": text_field(s, min_length=1),
            "importance": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": 5,
                "description": "null: let Cairn score it from the text again",
            },
            "tags": {**_tags_field(s), "type": ["array", "null"]},
            "pinned": {"type": "boolean"},
            "expires_at": {**DATETIME, "type": ["string", "null"]},
            "meta": meta_field(s),
        },
    }


def _patch(conn: sqlite3.Connection, mid: int, body: dict[str, Any], s: Settings) -> bool:
    """Apply an edit; returns whether the content changed (the vector must be recomputed)."""
    row = q.get_row(conn, mid)
    if row is None:
        raise _missing(mid)
    changes: dict[str, Any] = {}
    content = body.get("content", row["content"])
    if not content.strip():
        raise BadRequest("'content' must not be blank", field="content")
    kind = body.get("kind", row["kind"])
    content_changed = bool(content != row["content"])
    if content_changed:
        text_hash = normalised_hash(content)
        same = q.find_same(conn, row["project_id"], text_hash)
        if same is not None and same["id"] != mid:
            raise Conflict(
                f"memory {same['id']} in the same scope already holds this content",
                field="content",
            )
        changes["content"] = content
        changes["content_hash"] = text_hash
    if "kind" in body:
        changes["kind"] = kind
    if "importance" in body:
        given = body["importance"]
        changes["importance"] = given or importance_mod.score(content, kind)
        changes["importance_auto"] = 0 if given else 1
    elif row["importance_auto"] and (content_changed or "kind" in body):
        changes["importance"] = importance_mod.score(content, kind)
    if "tags" in body:
        given_tags = body["tags"]
        tags = (
            normalise_tags(given_tags, s.max_tags)
            if given_tags
            else pick_tags(content, s.memory_auto_tags)
        )
        changes["tags"] = dump_json(tags)
        changes["tags_auto"] = 0 if given_tags else 1
    elif row["tags_auto"] and content_changed:
        changes["tags"] = dump_json(pick_tags(content, s.memory_auto_tags))
    if "pinned" in body:
        changes["pinned"] = 1 if body["pinned"] else 0
    if "expires_at" in body:
        changes["expires_at"] = time_ms(body, "expires_at")
    if "meta" in body:
        changes["meta"] = dump_json(body["meta"])
    changes["updated_at"] = now_ms()
    q.update(conn, mid, changes)
    if content_changed:
        q.drop_embedding(conn, "memory", [mid])
    return content_changed


async def patch_memory(call: Call) -> Any:
    mid = call.path["id"]
    body = call.body or {}
    s = call.cairn.settings

    def write(conn: sqlite3.Connection) -> tuple[dict[str, Any], bool]:
        changed = _patch(conn, mid, body, s)
        row = q.get(conn, mid)
        assert row is not None
        return row, changed

    row, changed = await call.cairn.store.write(write)
    call.cairn.events.publish("memory.updated", row)
    if changed:
        forget_vectors(call, "memory", [mid])
        call.cairn.after_items("memory", [mid])
    return (await _out(call, [row]))[0]


def forget_vectors(call: Call, kind: str, ids: list[int]) -> None:
    """Drop items from the embedding service's in-memory vector index (the rows are gone)."""
    index = call.cairn.embeddings.index if call.cairn.embeddings is not None else None
    if index is not None:
        for item_id in ids:
            index.drop((kind, item_id))


async def delete_memory(call: Call) -> Any:
    mid = call.path["id"]
    row = await call.cairn.store.write(lambda c: q.delete(c, mid))
    if row is None:
        raise _missing(mid)
    forget_vectors(call, "memory", [mid])
    call.cairn.events.publish("memory.deleted", {"id": mid, "project": row["project"]})
    return {"id": mid, "deleted": True}


async def archive_memory(call: Call) -> Any:
    return await _set_archived(call, archived=True)


async def restore_memory(call: Call) -> Any:
    return await _set_archived(call, archived=False)


async def _set_archived(call: Call, *, archived: bool) -> Any:
    mid = call.path["id"]

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        row = q.get_row(conn, mid)
        if row is None:
            raise _missing(mid)
        now = now_ms()
        if archived:
            if row["archived_at"] is None:
                q.update(conn, mid, {"archived_at": now, "archive_reason": "manual"})
        else:
            changes: dict[str, Any] = {"archived_at": None, "archive_reason": None}
            # Restoring restarts the decay clock, and lifts an expiry that already passed;
            # otherwise the next decay pass would archive it again at once.
            changes["updated_at"] = now
            if row["expires_at"] is not None and row["expires_at"] <= now:
                changes["expires_at"] = None
            q.update(conn, mid, changes)
        out = q.get(conn, mid)
        assert out is not None
        return out

    row = await call.cairn.store.write(write)
    call.cairn.events.publish("memory.updated", row)
    return (await _out(call, [row]))[0]


async def get_relations(call: Call) -> Any:
    mid = call.path["id"]

    def read(conn: sqlite3.Connection) -> dict[str, Any]:
        row = q.get(conn, mid)
        if row is None:
            raise _missing(mid)
        newer, older = rq.update_links(conn, mid)
        ids = chain(mid, newer, older)
        related = rq.for_memory(conn, mid)
        others = {r["from_id"] for r in related} | {r["to_id"] for r in related} | set(ids)
        by_id = {m["id"]: m for m in q.get_many(conn, sorted(others))}
        return {
            "id": mid,
            "is_latest": row["is_latest"],
            "superseded_by": row["superseded_by"],
            "supersedes": [
                r["to_id"] for r in related if r["kind"] == "updates" and r["from_id"] == mid
            ],
            "latest_id": ids[-1],
            "chain": [_brief(by_id[i]) for i in ids if i in by_id],
            "relations": [
                {
                    **r,
                    "direction": "outgoing" if r["from_id"] == mid else "incoming",
                    "other": _brief(by_id[r["to_id"] if r["from_id"] == mid else r["from_id"]]),
                }
                for r in related
            ],
        }

    return await call.cairn.store.read(read)


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "kind", "content", "importance", "created_at", "archived", "is_latest")
    return {k: row[k] for k in keys}


def relation_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "required": ["to_id", "kind"],
        "properties": {
            "to_id": {"type": "integer", "minimum": 1},
            "kind": {
                "type": "string",
                "enum": list(RELATION_KINDS),
                "description": "updates: this memory supersedes to_id; extends; derives",
            },
        },
    }


async def add_relation(call: Call) -> Any:
    mid = call.path["id"]
    to_id = call.body["to_id"]
    kind = call.body["kind"]
    if to_id == mid:
        raise BadRequest("a memory cannot relate to itself", field="to_id")

    def write(conn: sqlite3.Connection) -> tuple[dict[str, Any], bool]:
        if q.get_row(conn, mid) is None:
            raise _missing(mid)
        if q.get_row(conn, to_id) is None:
            raise NotFound(f"memory {to_id} does not exist", field="to_id")
        return rq.add(conn, mid, to_id, kind, "manual")

    relation, created = await call.cairn.store.write(write)
    if kind == "updates":
        changed = await call.cairn.store.read(lambda c: q.get_many(c, [mid, to_id]))
        for row in changed:
            call.cairn.events.publish("memory.updated", row)
    return with_status({**relation, "created": created}, 201 if created else 200)


async def delete_relation(call: Call) -> Any:
    mid = call.path["id"]
    rel_id = call.path["rel_id"]

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        rel = rq.get(conn, rel_id)
        if rel is None or mid not in (rel["from_id"], rel["to_id"]):
            raise NotFound(f"memory {mid} has no relation {rel_id}", field="rel_id")
        removed = rq.remove(conn, rel_id)
        assert removed is not None
        return removed

    removed = await call.cairn.store.write(write)
    if removed["kind"] == "updates":
        older = await call.cairn.store.read(lambda c: q.get(c, removed["to_id"]))
        if older is not None:
            call.cairn.events.publish("memory.updated", older)
    return {**removed, "deleted": True}


def endpoints(s: Settings) -> list[Endpoint]:
    ref = MEMORY
    one = "/api/memories/{id:int}"
    return [
        Endpoint(
            "POST",
            "/api/memories",
            create_memory,
            "Save a memory (importance and tags scored when absent; a repeat merges; "
            "a newer value supersedes an older memory)",
            TAG,
            body=create_schema(s),
            status=201,
            extra_statuses=(200,),
            response=ref,
        ),
        Endpoint(
            "GET",
            "/api/memories",
            list_memories,
            "List memories (filters, newest first, cursor) or fetch many by ids",
            TAG,
            query=list_query(s),
            response={"type": "object", "properties": {"items": {"type": "array", "items": ref}}},
        ),
        Endpoint("GET", one, get_memory, "Get one memory", TAG, response=ref),
        Endpoint(
            "PATCH",
            one,
            patch_memory,
            "Edit a memory (content, kind, importance, tags, pinned, expiry, meta)",
            TAG,
            body=patch_schema(s),
            extra_statuses=(409,),
            response=ref,
        ),
        Endpoint(
            "DELETE",
            one,
            delete_memory,
            "Forget a memory for good (row, keyword index, vector, relations)",
            TAG,
        ),
        Endpoint(
            "POST",
            one + "/archive",
            archive_memory,
            "Archive a memory (leaves injection and default search; restorable)",
            TAG,
            body={"type": "object"},
            body_required=False,
            response=ref,
        ),
        Endpoint(
            "POST",
            one + "/restore",
            restore_memory,
            "Restore an archived memory (its decay clock restarts)",
            TAG,
            body={"type": "object"},
            body_required=False,
            response=ref,
        ),
        Endpoint(
            "GET",
            one + "/relations",
            get_relations,
            "A memory's relations and its update chain (oldest first), with is_latest",
            TAG,
        ),
        Endpoint(
            "POST",
            one + "/relations",
            add_relation,
            "Relate this memory to another (updates = supersedes it)",
            TAG,
            body=relation_schema(s),
            status=201,
            extra_statuses=(200,),
        ),
        Endpoint(
            "DELETE",
            one + "/relations/{rel_id:int}",
            delete_relation,
            "Remove a relation (removing an update makes the older memory current again)",
            TAG,
        ),
    ]
