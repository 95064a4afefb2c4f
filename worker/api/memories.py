"""Memories: create (scored, tagged, merged, superseding), list, get, edit, archive, forget, relations."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint, with_status
from worker.ops import memories as ops
from worker.ops.fields import SESSION_ID, int_cursor, page_query, parse_ids, project_field
from worker.ops.memories import create_schema, patch_schema
from worker.ops.relations import add_relation as relate
from worker.ops.relations import delete_relation as unrelate
from worker.ops.relations import memory_relations, relation_schema
from worker.schema import Schema
from worker.settings import Settings
from worker.store import memories as q

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
        "author": {"type": ["string", "null"]},
    },
}


async def create_memory(call: Call) -> Any:
    payload = await ops.create(call.cairn, call.body)
    return with_status(payload, 201 if payload["created"] else 200)


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
        ids = parse_ids(qp["ids"], s.limits.max_page_size)
        return {"items": await ops.get_many(call.cairn, ids), "next_cursor": None}
    query = q.MemoryQuery(
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
        limit=qp.get("limit", s.limits.page_size),
    )
    items, cursor = await ops.list_memories(call.cairn, query)
    return {"items": items, "next_cursor": str(cursor) if cursor else None}


async def get_memory(call: Call) -> Any:
    return await ops.get(call.cairn, call.path["id"])


async def patch_memory(call: Call) -> Any:
    return await ops.update(call.cairn, call.path["id"], call.body or {})


async def delete_memory(call: Call) -> Any:
    return await ops.forget(call.cairn, call.path["id"])


async def archive_memory(call: Call) -> Any:
    return await ops.set_archived(call.cairn, call.path["id"], archived=True)


async def restore_memory(call: Call) -> Any:
    return await ops.set_archived(call.cairn, call.path["id"], archived=False)


async def get_relations(call: Call) -> Any:
    return await memory_relations(call.cairn, call.path["id"])


async def add_relation(call: Call) -> Any:
    relation = await relate(call.cairn, call.path["id"], call.body)
    return with_status(relation, 201 if relation["created"] else 200)


async def delete_relation(call: Call) -> Any:
    return await unrelate(call.cairn, call.path["id"], call.path["rel_id"])


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
