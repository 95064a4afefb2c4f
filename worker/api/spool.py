"""The hooks' spool: its state, and a replay on demand (otherwise it runs at start and periodically)."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint, with_status
from worker.errors import ServiceUnavailable
from worker.settings import Settings
from worker.spool import SpoolReplayer, backlog

TAG = "spool"


def _replayer(call: Call) -> SpoolReplayer | None:
    return call.cairn.spool


async def spool_status(call: Call) -> Any:
    replayer = _replayer(call)
    if replayer is None:
        return {"running": False, "backlog": backlog(call.cairn.settings)}
    return {"running": True, **replayer.status(), "backlog": backlog(call.cairn.settings)}


async def replay_now(call: Call) -> Any:
    replayer = _replayer(call)
    if replayer is None:
        raise ServiceUnavailable("the spool replayer is not running")
    if isinstance(call.body, dict) and call.body.get("wait") is False:
        replayer.wake()  # hooks nudge the worker when they see a backlog; they never wait
        return with_status({"scheduled": True}, 202)
    result = await replayer.replay()
    return {**result.as_dict(), "backlog": backlog(call.cairn.settings)}


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "GET",
            "/api/spool",
            spool_status,
            "The hooks' offline spool: backlog (files, bytes, events, dropped) and replay totals",
            TAG,
        ),
        Endpoint(
            "POST",
            "/api/spool/replay",
            replay_now,
            "Replay the spool now (exactly once by event_id) and return what was done; "
            "with {wait: false}, schedule a replay and return 202 at once",
            TAG,
            body={
                "type": "object",
                "properties": {
                    "wait": {"type": "boolean", "description": "false: schedule, do not wait"}
                },
            },
            body_required=False,
            extra_statuses=(202, 503),
        ),
    ]
