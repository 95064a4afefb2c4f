"""Lifecycle routes: the decay pass, compression, and archive/restore/forget for observations."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.ops import lifecycle as ops
from worker.ops.lifecycle import compress_schema, decay_schema
from worker.schema import Schema
from worker.settings import Settings

TAG = "lifecycle"


async def run_decay(call: Call) -> Any:
    return await ops.run_decay(call.cairn, call.body or {})


async def decay_status(call: Call) -> Any:
    return await ops.decay_status(call.cairn)


async def run_compress(call: Call) -> Any:
    return await ops.run_compress(call.cairn, call.body or {})


async def archive_observation(call: Call) -> Any:
    return await ops.set_observation_archived(call.cairn, call.path["id"], archived=True)


async def restore_observation(call: Call) -> Any:
    return await ops.set_observation_archived(call.cairn, call.path["id"], archived=False)


async def delete_observation(call: Call) -> Any:
    return await ops.forget_observation(call.cairn, call.path["id"])


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
