"""The project profile: GET /api/projects/{id}/profile and GET /api/profile?project=key."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.errors import NotFound
from worker.memory.profile import refresh_profile, render_profile
from worker.ops.fields import project_field
from worker.settings import Settings
from worker.store import projects
from worker.store.db import AnyDb

TAG = "projects"


async def _profile(call: Call, project_id: int, label: str) -> dict[str, Any]:
    s = call.cairn.settings
    force = bool(call.query.get("refresh", False))

    def write(conn: AnyDb) -> dict[str, Any] | None:
        return refresh_profile(conn, project_id, s, reader=call.cairn.reader, force=force)

    profile = await call.cairn.store.write(write)
    if profile is None:
        raise NotFound(f"project {label} does not exist", field="project")
    return {**profile, "text": render_profile(profile)}


async def project_profile(call: Call) -> Any:
    pid = int(call.path["project_id"])
    return await _profile(call, pid, str(pid))


async def profile_by_key(call: Call) -> Any:
    key = call.query["project"]
    pid = await call.cairn.store.read(lambda c: projects.find(c, key))
    if pid is None:
        raise NotFound(f"project {key!r} does not exist", field="project")
    return await _profile(call, pid, repr(key))


def endpoints(s: Settings) -> list[Endpoint]:
    refresh = {
        "refresh": {"type": "boolean", "description": "Recompute even if the cache is valid."}
    }
    description = (
        "Static part: languages (from files touched), build/test commands seen succeeding "
        "(exit 0), main folders, important decisions and preferences. Dynamic part: current "
        "task (latest real prompt), in-progress plan items, files in flight. Cached until the "
        "project's data changes or `profile_ttl_seconds` pass. `text` is the compact Markdown "
        "injected at session start."
    )
    return [
        Endpoint(
            "GET",
            "/api/projects/{project_id:int}/profile",
            project_profile,
            "The project profile (computed without an LLM, cached)",
            TAG,
            query=refresh,
            extra_statuses=(404,),
            description=description,
        ),
        Endpoint(
            "GET",
            "/api/profile",
            profile_by_key,
            "The project profile by project key",
            TAG,
            query={"project": project_field(s), **refresh},
            required_query=("project",),
            extra_statuses=(404,),
            description=description,
        ),
    ]
