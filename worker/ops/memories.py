"""Memories: save (scored, tagged, merged, superseding), list, get, edit, archive, restore,
forget; each answer carries the memory's current retention."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import anyio.to_thread

from worker.clock import now_ms, parse_iso
from worker.container import Cairn
from worker.errors import BadRequest, Conflict, NotFound
from worker.memory import importance as importance_mod
from worker.memory.decay import ActivityClock, DecayPolicy, memory_retention
from worker.memory.kind import infer_kind
from worker.memory.merge import save, wants_supersession
from worker.memory.tags import normalise_tags, pick_tags
from worker.ops.fields import (
    AUTHOR,
    DATETIME,
    EVENT_ID,
    NEW_SESSION_ID,
    meta_field,
    project_field,
    text_field,
    time_ms,
)
from worker.schema import Schema
from worker.settings import Settings
from worker.store import memories as q
from worker.store import projects
from worker.store.db import AnyDb
from worker.store.rows import dump_json, normalised_hash


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


async def with_retentions(cairn: Cairn, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows, each with its current retention (see with_retention)."""
    policy = policy_for(cairn.settings)
    now = now_ms()
    keys = sorted({r["project"] for r in rows if r["project"] is not None})

    def read(conn: AnyDb) -> tuple[dict[str, int], ActivityClock]:
        found = {k: projects.find(conn, k) for k in keys}
        ids = {k: pid for k, pid in found.items() if pid is not None}
        scopes: list[int | None] = [*ids.values()]
        if any(r["project"] is None for r in rows):
            scopes.append(None)
        return ids, ActivityClock.load(conn, scopes, now)

    ids, clock = await cairn.store.read(read)
    return [with_retention(r, policy, clock, ids.get(r["project"] or "")) for r in rows]


def tags_field(s: Settings) -> Schema:
    return {
        "type": "array",
        "maxItems": s.limits.max_tags,
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
            "tags": tags_field(s),
            "pinned": {"type": "boolean"},
            "expires_at": DATETIME,
            "created_at": DATETIME,
            "session_id": NEW_SESSION_ID,
            "author": AUTHOR,
            "event_id": EVENT_ID,
            "meta": meta_field(s),
            "supersede": {
                "type": "boolean",
                "description": "Check whether this memory replaces an older one (default: true, "
                "false for imports that carry created_at).",
            },
        },
    }


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
            "tags": {**tags_field(s), "type": ["array", "null"]},
            "pinned": {"type": "boolean"},
            "expires_at": {**DATETIME, "type": ["string", "null"]},
            "meta": meta_field(s),
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


async def similar_memories(cairn: Cairn, item: dict[str, Any]) -> dict[int, float]:
    """Cosine of this text with the scope's memories, when the embedding model is loaded.

    Lets supersession find a paraphrased update ("we upgraded the DB to Postgres 16") that shares
    too few words with the old memory for the lexical check. Empty when embeddings are off.
    """
    s = cairn.settings
    service = cairn.embeddings
    if not wants_supersession(item, s):
        return {}
    if service is None or not service.ready:
        return {}
    vector = await anyio.to_thread.run_sync(service.embed_query, item["content"])
    if vector is None:
        return {}
    project_id: int | None = None
    if item["scope"] == "project":
        project_id = await cairn.store.read(lambda c: projects.find(c, item["project"]))
        if project_id is None:
            return {}
    index = service.index
    if index is None:
        return {}
    found = vector
    # In a thread: on a team database with pgvector the search is a query.
    hits = await anyio.to_thread.run_sync(
        lambda: index.search(found, project_id=project_id, kinds=["memory"], limit=10)
    )
    return {int(ref[1]): float(score) for ref, score in hits}


def resolve_project(conn: AnyDb, given: str) -> str:
    """The project key a memory's `project` names: a known key as it is; else a short name
    ("demo-repo") that is the display name of exactly one known project, that project's key
    (saving it as a new key made a second project with the same name in every list); a name
    several projects share is a 400 naming them; anything else a new project, as given."""
    if projects.find(conn, given) is not None:
        return given
    keys = projects.keys_named(conn, given)
    if len(keys) > 1:
        raise BadRequest(
            f"'project' {given!r} is the name of {len(keys)} projects: "
            + ", ".join(keys)
            + "; give one of these keys",
            field="project",
        )
    return keys[0] if keys else given


async def create(cairn: Cairn, body: dict[str, Any]) -> dict[str, Any]:
    """Save a memory from a validated body (`create_schema`): scored, tagged, merged with a
    repeat, superseding an older one; `created` in the answer says whether it is new."""
    item = _item(body)
    if item["scope"] == "project":
        given = str(item["project"])
        item["project"] = await cairn.store.read(lambda c: resolve_project(c, given))
    project = item.get("project") if item["scope"] == "project" else None
    item["author"] = body.get("author") or cairn.author_for(project)
    settings = cairn.settings
    similar = await similar_memories(cairn, item)
    reader = cairn.reader
    saved = await cairn.store.write(lambda conn: save(conn, item, settings, similar, reader))
    superseded = await cairn.store.read(lambda c: q.get_many(c, saved.superseded))
    if saved.created:
        cairn.events.publish("memory.created", saved.row)
        cairn.after_items("memory", [saved.row["id"]])
    elif saved.merged:
        cairn.events.publish("memory.updated", saved.row)
        if saved.retagged:
            cairn.after_items("memory", [saved.row["id"]])
    for old in superseded:
        cairn.events.publish("memory.updated", old)
    row = (await with_retentions(cairn, [saved.row]))[0]
    payload = {
        **row,
        "created": saved.created,
        "merged": saved.merged,
        "duplicate": not saved.created,
        "supersedes": saved.superseded,
    }
    return payload


async def list_memories(
    cairn: Cairn, query: q.MemoryQuery
) -> tuple[list[dict[str, Any]], int | None]:
    """A page of memories, newest first, each with its retention; and the next cursor."""
    items, cursor = await cairn.store.read(lambda c: q.list_page(c, query))
    return await with_retentions(cairn, items), cursor


async def get_many(cairn: Cairn, ids: list[int]) -> list[dict[str, Any]]:
    items = await cairn.store.read(lambda c: q.get_many(c, ids))
    return await with_retentions(cairn, items)


def missing(memory_id: int) -> NotFound:
    return NotFound(f"memory {memory_id} does not exist", field="id")


async def get(cairn: Cairn, mid: int) -> dict[str, Any]:
    """One memory with its retention and the signals its importance was scored from."""
    row = await cairn.store.read(lambda c: q.get(c, mid))
    if row is None:
        raise missing(mid)
    out = (await with_retentions(cairn, [row]))[0]
    out["importance_signals"] = importance_mod.signals(row["content"], row["kind"])
    return out


def _patch(conn: AnyDb, mid: int, body: dict[str, Any], s: Settings) -> bool:
    """Apply an edit; returns whether the content changed (the vector must be recomputed)."""
    row = q.get_row(conn, mid)
    if row is None:
        raise missing(mid)
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
            normalise_tags(given_tags, s.limits.max_tags)
            if given_tags
            else pick_tags(content, s.memories.auto_tags)
        )
        changes["tags"] = dump_json(tags)
        changes["tags_auto"] = 0 if given_tags else 1
    elif row["tags_auto"] and content_changed:
        changes["tags"] = dump_json(pick_tags(content, s.memories.auto_tags))
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


async def update(cairn: Cairn, mid: int, body: dict[str, Any]) -> dict[str, Any]:
    """Apply a validated edit (`patch_schema`); a new content is embedded again."""
    s = cairn.settings

    def write(conn: AnyDb) -> tuple[dict[str, Any], bool]:
        changed = _patch(conn, mid, body, s)
        row = q.get(conn, mid)
        assert row is not None
        return row, changed

    row, changed = await cairn.store.write(write)
    cairn.events.publish("memory.updated", row)
    if changed:
        forget_vectors(cairn, "memory", [mid])
        cairn.after_items("memory", [mid])
    return (await with_retentions(cairn, [row]))[0]


def forget_vectors(cairn: Cairn, kind: str, ids: list[int]) -> None:
    """Drop items from the embedding service's in-memory vector index (the rows are gone)."""
    index = cairn.embeddings.index if cairn.embeddings is not None else None
    if index is not None:
        for item_id in ids:
            index.drop((kind, item_id))


async def forget(cairn: Cairn, mid: int) -> dict[str, Any]:
    """Forget a memory for good (row, keyword index, vector, relations)."""
    row = await cairn.store.write(lambda c: q.delete(c, mid))
    if row is None:
        raise missing(mid)
    forget_vectors(cairn, "memory", [mid])
    cairn.events.publish("memory.deleted", {"id": mid, "project": row["project"]})
    return {"id": mid, "deleted": True}


async def set_archived(cairn: Cairn, mid: int, *, archived: bool) -> dict[str, Any]:
    """Archive a memory, or restore it (its decay clock restarts)."""

    def write(conn: AnyDb) -> dict[str, Any]:
        row = q.get_row(conn, mid)
        if row is None:
            raise missing(mid)
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

    row = await cairn.store.write(write)
    cairn.events.publish("memory.updated", row)
    return (await with_retentions(cairn, [row]))[0]
