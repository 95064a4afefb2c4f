"""Lifecycle operations: the decay pass, compression, and archive/restore/forget for observations."""

from __future__ import annotations

from typing import Any

from worker.clock import now_ms, to_iso
from worker.container import Cairn
from worker.errors import BadRequest, NotFound
from worker.memory import compress, decay
from worker.ops.fields import project_field
from worker.ops.memories import forget_vectors, policy_for
from worker.schema import Schema
from worker.settings import Settings
from worker.store import lifecycle, projects
from worker.store import memories as memories_store
from worker.store import observations as observations_store
from worker.store.db import AnyDb


def _project_id(conn: AnyDb, key: str) -> int:
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


async def run_decay(cairn: Cairn, body: dict[str, Any]) -> dict[str, Any]:
    """A decay pass now (a validated `decay_schema` body); dry_run only reports."""
    policy = policy_for(cairn.settings)
    dry_run = bool(body.get("dry_run", False))

    def write(conn: AnyDb) -> dict[str, Any]:
        pid = _project_id(conn, body["project"]) if body.get("project") else None
        return decay.run_pass(conn, policy, now_ms(), project_id=pid, dry_run=dry_run)

    result = await cairn.store.write(write)
    result["ran_at"] = to_iso(now_ms())
    if not dry_run:
        service = cairn.decay
        if service is not None:
            service.record(result)
            service.announce(result)
    return result


async def decay_status(cairn: Cairn) -> dict[str, Any]:
    policy = policy_for(cairn.settings)
    service = cairn.decay
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


async def run_compress(cairn: Cairn, body: dict[str, Any]) -> dict[str, Any]:
    """Merge near-duplicate memories (a validated `compress_schema` body); dry_run only plans."""
    s = cairn.settings
    dry_run = bool(body.get("dry_run", False))
    scope = body.get("scope") or ("project" if body.get("project") else "all")

    def write(conn: AnyDb) -> tuple[dict[str, Any], list[dict[str, Any]]]:
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

    result, rows = await cairn.store.write(write)
    for row in rows:
        cairn.events.publish("memory.updated", row)
    changed = result.pop("changed_ids")
    if changed:
        forget_vectors(cairn, "memory", changed)
        cairn.after_items("memory", changed)
    return result


def _missing(oid: int) -> NotFound:
    return NotFound(f"observation {oid} does not exist", field="id")


def _visible_or_missing(cairn: Cairn, conn: AnyDb, oid: int) -> None:
    """A teammate's private observation is missing to this worker: never archived, restored
    or forgotten by it (store/privacy.py), as GET /api/observations/{id} answers 404."""
    row = observations_store.get(conn, oid)
    if row is None or not cairn.visible(row):
        raise _missing(oid)


async def set_observation_archived(cairn: Cairn, oid: int, *, archived: bool) -> dict[str, Any]:
    """Archive an observation, or restore it (its decay clock restarts)."""

    def write(conn: AnyDb) -> dict[str, Any]:
        _visible_or_missing(cairn, conn, oid)
        if archived:
            lifecycle.archive(conn, "observation", [oid], now_ms(), "manual")
        else:
            lifecycle.restore_observation(conn, oid, now_ms())
        row = observations_store.get(conn, oid)
        if row is None:
            raise _missing(oid)
        return row

    row = await cairn.store.write(write)
    cairn.events.publish("observation.updated", row)
    return row


async def forget_observation(cairn: Cairn, oid: int) -> dict[str, Any]:
    """Forget an observation for good (row, keyword indexes, vector)."""

    def write(conn: AnyDb) -> None:
        _visible_or_missing(cairn, conn, oid)
        lifecycle.delete_observation(conn, oid)

    await cairn.store.write(write)
    forget_vectors(cairn, "observation", [oid])
    cairn.events.publish("observation.deleted", {"id": oid})
    return {"id": oid, "deleted": True}
