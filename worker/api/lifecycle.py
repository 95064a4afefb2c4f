"""Lifecycle routes: the decay pass, compression, and archive/restore/forget for observations."""

from __future__ import annotations

import sqlite3
from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.api.memories import forget_vectors, policy_for
from worker.clock import now_ms, to_iso
from worker.errors import BadRequest, NotFound
from worker.memory import compress, decay
from worker.ops.fields import project_field
from worker.schema import Schema
from worker.settings import Settings
from worker.store import lifecycle, projects
from worker.store import memories as memories_store
from worker.store import observations as observations_store

TAG = "lifecycle"


def _project_id(conn: sqlite3.Connection, key: str) -> int:
    pid = projects.find(conn, key)
    if pid is None:
        raise NotFound(f"project {key!r} does not exist", field="project")
    return pid


def decay_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "properties": {
            "project": {**project_field(s), "description": "Only this project (default: all)"},
            "dry_run": {"type": "boolean", "description": "Report what would be archived"},
        },
    }


async def run_decay(call: Call) -> Any:
    body = call.body or {}
    policy = policy_for(call.cairn.settings)
    dry_run = bool(body.get("dry_run", False))

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        pid = _project_id(conn, body["project"]) if body.get("project") else None
        return decay.run_pass(conn, policy, now_ms(), project_id=pid, dry_run=dry_run)

    result = await call.cairn.store.write(write)
    result["ran_at"] = to_iso(now_ms())
    if not dry_run:
        service = call.cairn.decay
        if service is not None:
            service.record(result)
            service.announce(result)
    return result


async def decay_status(call: Call) -> Any:
    policy = policy_for(call.cairn.settings)
    service = call.cairn.decay
    return {
        "policy": {
            "clock": "active_days",
            "memory_half_lives_days": list(policy.memory_half_lives_days),
            "reinforcement": policy.reinforcement,
            "observation_half_lives_days": policy.observation_half_lives_days,
            "observation_cap": policy.observation_cap,
            "chatter_types": list(policy.chatter_types),
            "archives": ["expired", "cap"],
        },
        "service": service.status() if service is not None else None,
    }


def compress_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "properties": {
            "project": {**project_field(s), "description": "Only this project"},
            "scope": {
                "type": "string",
                "enum": ["project", "global", "all"],
                "description": "global: the global memories; all (default without project): "
                "every project and the global scope, each compared within itself",
            },
            "dry_run": {"type": "boolean", "description": "Only report the merges (no change)"},
        },
    }


async def run_compress(call: Call) -> Any:
    body = call.body or {}
    s = call.cairn.settings
    dry_run = bool(body.get("dry_run", False))
    scope = body.get("scope") or ("project" if body.get("project") else "all")

    def write(conn: sqlite3.Connection) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        scopes: list[int | None] | None
        if scope == "global":
            scopes = [None]
        elif scope == "project":
            if not body.get("project"):
                raise BadRequest("'project' is required when 'scope' is 'project'", field="project")
            scopes = [_project_id(conn, body["project"])]
        else:
            scopes = None
        result = compress.run(conn, s, scopes=scopes, dry_run=dry_run)
        touched = sorted(
            {m["keep_id"] for m in result["merges"]}
            | {m["archive_id"] for m in result["merges"]}
            | {x["old_id"] for x in result["supersessions"]}
        )
        rows = [] if dry_run else memories_store.get_many(conn, touched)
        return result, rows

    result, rows = await call.cairn.store.write(write)
    for row in rows:
        call.cairn.events.publish("memory.updated", row)
    changed = result.pop("changed_ids")
    if changed:
        forget_vectors(call, "memory", changed)
        call.cairn.after_items("memory", changed)
    return result


def _missing(oid: int) -> NotFound:
    return NotFound(f"observation {oid} does not exist", field="id")


async def archive_observation(call: Call) -> Any:
    return await _set_observation_archived(call, archived=True)


async def restore_observation(call: Call) -> Any:
    return await _set_observation_archived(call, archived=False)


async def _set_observation_archived(call: Call, *, archived: bool) -> Any:
    oid = call.path["id"]

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        if archived:
            if observations_store.get(conn, oid) is not None:
                lifecycle.archive(conn, "observation", [oid], now_ms(), "manual")
        else:
            lifecycle.restore_observation(conn, oid, now_ms())
        row = observations_store.get(conn, oid)
        if row is None:
            raise _missing(oid)
        return row

    row = await call.cairn.store.write(write)
    call.cairn.events.publish("observation.updated", row)
    return row


async def delete_observation(call: Call) -> Any:
    oid = call.path["id"]
    found = await call.cairn.store.write(lambda c: lifecycle.delete_observation(c, oid))
    if not found:
        raise _missing(oid)
    forget_vectors(call, "observation", [oid])
    call.cairn.events.publish("observation.deleted", {"id": oid})
    return {"id": oid, "deleted": True}


def endpoints(s: Settings) -> list[Endpoint]:
    one = "/api/observations/{id:int}"
    empty: Schema = {"type": "object"}
    return [
        Endpoint(
            "POST",
            "/api/decay/run",
            run_decay,
            "Run a decay pass now: archive expired memories (pinned ones stay) and, in each "
            "project over its observation cap, exactly the overflow, least valuable first "
            "(tool chatter, then lower importance, then lower retention); nothing is archived "
            "for being old. Answers counts and ids per kind",
            TAG,
            body=decay_schema(s),
            body_required=False,
        ),
        Endpoint(
            "GET",
            "/api/decay",
            decay_status,
            "The decay policy (half-lives in the project's active days, the observation cap, "
            "chatter types) and the scheduled pass (last run, next run)",
            TAG,
        ),
        Endpoint(
            "POST",
            "/api/compress",
            run_compress,
            "Merge near-duplicate memories (cosine of embeddings, lexical fallback); dry_run "
            "reports the plan",
            TAG,
            body=compress_schema(s),
            body_required=False,
        ),
        Endpoint(
            "POST",
            one + "/archive",
            archive_observation,
            "Archive an observation (leaves injection and default lists; restorable)",
            TAG,
            body=empty,
            body_required=False,
        ),
        Endpoint(
            "POST",
            one + "/restore",
            restore_observation,
            "Restore an archived observation (its decay clock restarts)",
            TAG,
            body=empty,
            body_required=False,
        ),
        Endpoint(
            "DELETE",
            one,
            delete_observation,
            "Forget an observation for good (row, keyword indexes, vector)",
            TAG,
        ),
    ]
