"""The hooks' spool: its state, and a replay on demand (otherwise it runs at start and periodically)."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint, with_status
from worker.errors import BadRequest, ServiceUnavailable
from worker.ops.status import note_import
from worker.settings import Settings
from worker.spool import ROUTES, ReplayResult, SpoolLine, SpoolReplayer, backlog

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


def _event_line(raw: Any, index: int) -> SpoolLine:
    where = f"events[{index}]"
    if not isinstance(raw, dict):
        raise BadRequest(f"'{where}' must be an object {{method, path, body}}", field=where)
    method, path, body = raw.get("method"), raw.get("path"), raw.get("body")
    if not isinstance(method, str) or not isinstance(path, str) or len(path) > 2048:
        raise BadRequest(f"'{where}' needs a method and a path", field=where)
    if ".." in path or not any(m == method and p.fullmatch(path) for m, p in ROUTES):
        raise BadRequest(
            f"'{where}': {method} {path[:200]} is not a request the hooks send", field=where
        )
    if body is not None and not isinstance(body, dict):
        raise BadRequest(f"'{where}.body' must be an object", field=f"{where}.body")
    return SpoolLine(index, method, path, body)


async def receive_events(call: Call) -> Any:
    """A batch of hook requests (an import of history): delivered as a spool replay is, each
    session's in order (sessions side by side), so each meets the validation and idempotency
    (event_id) of a live one."""
    replayer = _replayer(call)
    if replayer is None:
        raise ServiceUnavailable("the spool replayer is not running")
    lines = [_event_line(raw, i) for i, raw in enumerate(call.body["events"])]
    await note_import(call.cairn)  # the dashboard shows its embedding's progress
    result = ReplayResult()
    delivered = await replayer.deliver_by_session(lines, result)
    out = {
        "delivered": delivered,
        "stored": result.replayed,
        "duplicates": result.duplicates,
        "rejected": result.rejected,
        "errors": result.errors[:10],
    }
    if delivered < len(lines):
        return with_status(out, 503)
    return out


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
        Endpoint(
            "POST",
            "/api/spool/events",
            receive_events,
            "Deliver a batch of hook requests ({method, path, body}, as the hooks spool them) in "
            "order, exactly once by event_id: what `cairn import claude-code` sends. Answers "
            "{delivered, stored, duplicates, rejected, errors}; 503 with `delivered` when the "
            "worker could take no more (send the rest again)",
            TAG,
            body={
                "type": "object",
                "required": ["events"],
                "properties": {
                    "events": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": s.limits.max_batch,
                        "items": {"type": "object"},
                    }
                },
            },
            extra_statuses=(503,),
        ),
    ]
