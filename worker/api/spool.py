"""The hooks' spool: its state, and a replay on demand (otherwise it runs at start and periodically)."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.errors import ServiceUnavailable
from worker.settings import Settings
from worker.spool import SpoolReplayer, backlog

TAG = "spool"


def _replayer(call: Call) -> SpoolReplayer | None:
    service = call.cairn.services.get("spool")
    return service if isinstance(service, SpoolReplayer) else None


async def spool_status(call: Call) -> Any:
    replayer = _replayer(call)
    if replayer is None:
        return {"running": False, "backlog": backlog(call.cairn.settings)}
    return {"running": True, **replayer.status()}


async def replay_now(call: Call) -> Any:
    replayer = _replayer(call)
    if replayer is None:
        raise ServiceUnavailable("the spool replayer is not running")
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
            "Replay the spool now (exactly once by event_id); returns what was done",
            TAG,
            extra_statuses=(503,),
        ),
    ]
