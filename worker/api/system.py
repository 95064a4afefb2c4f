"""Health, status, stats, projects, the SSE event stream and the OpenAPI document."""

from __future__ import annotations

from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from worker import __version__
from worker.api.endpoint import Call, Endpoint
from worker.clock import now_ms
from worker.metrics import CONTENT_TYPE
from worker.ops.fields import project_field
from worker.ops.status import status_report
from worker.settings import Settings
from worker.store import projects, stats
from worker.store.errors import StoreError

TAG = "system"


async def health(call: Call) -> Any:
    return {"ok": True, "version": __version__}


async def status(call: Call) -> Any:
    return await status_report(call.cairn)


async def list_projects(call: Call) -> Any:
    return {"items": await call.cairn.store.read(projects.list_all)}


async def get_stats(call: Call) -> Any:
    qp = call.query
    days = qp.get("days", 30)
    data = await call.cairn.store.read(lambda c: stats.breakdown(c, qp.get("project"), days))
    data["counts"] = await call.cairn.store.read(stats.counts)
    data["db_size_bytes"] = call.cairn.store.db_size_bytes()
    return data


async def events(call: Call) -> Any:
    request = call.request
    broadcaster = call.cairn.events
    last_id = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
    queue = broadcaster.subscribe()
    return EventSourceResponse(
        broadcaster.stream(queue, last_id),
        ping=call.cairn.settings.dashboard.sse_ping_seconds,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def openapi(request: Request) -> Response:
    from worker.api.openapi import build_openapi

    app = request.app
    return JSONResponse(build_openapi(app.routes, app.state.settings))


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "GET",
            "/health",
            health,
            "Liveness (no auth): {ok, version}",
            TAG,
            response={
                "type": "object",
                "required": ["ok", "version"],
                "properties": {"ok": {"type": "boolean"}, "version": {"type": "string"}},
            },
        ),
        Endpoint(
            "GET", "/api/status", status, "Worker status: pid, port, uptime, counts, db size", TAG
        ),
        Endpoint("GET", "/api/projects", list_projects, "List projects with counts", "projects"),
        Endpoint(
            "GET",
            "/api/stats",
            get_stats,
            "Counts by type, project and day; db size",
            TAG,
            query={
                "project": project_field(s),
                "days": {"type": "integer", "minimum": 1, "maximum": 3650},
            },
        ),
        Endpoint(
            "GET",
            "/api/events",
            events,
            "Server-sent events: observation.created, session.started|ended, "
            "summary.created, memory.created|updated|deleted (Last-Event-ID resume)",
            "events",
            raw_response=True,
            media_type="text/event-stream",
            query={"last_event_id": {"type": "string", "maxLength": 100}},
        ),
    ]


async def metrics(request: Request) -> Response:
    """Prometheus text: the worker's counters and histograms, then gauges read now."""
    cairn = request.state.cairn
    services = {name: service.status() for name, service in cairn.services.items()}
    spool = services.get("spool") or {}
    embed = services.get("embeddings") or {}
    gauges: list[tuple[str, str, float]] = [
        ("cairn_uptime_seconds", "Seconds since the worker started", _uptime(cairn)),
        (
            "cairn_spool_waiting_events",
            "Hook events spooled, not yet delivered",
            float(spool.get("waiting_events") or 0),
        ),
        (
            "cairn_embed_queue_depth",
            "Items waiting for their vector",
            float(embed.get("queue_depth") or 0),
        ),
        (
            "cairn_sse_clients",
            "Dashboards following the live feed",
            float(cairn.events.client_count),
        ),
    ]
    try:
        counted = await cairn.store.read(stats.counts)
        size = float(cairn.store.db_size_bytes())
    except StoreError:
        gauges.append(("cairn_database_up", "1: the database answers", 0.0))
    else:
        gauges.append(("cairn_database_up", "1: the database answers", 1.0))
        gauges.append(("cairn_database_size_bytes", "Database size (with its WAL)", size))
        for table, n in sorted(counted.items()):
            gauges.append((f"cairn_{table}", f"Rows in {table}", float(n)))
    return PlainTextResponse(cairn.metrics.render(gauges), media_type=CONTENT_TYPE)


def _uptime(cairn: Any) -> float:
    return max(0.0, (now_ms() - int(cairn.started_at_ms)) / 1000)


def raw_routes() -> list[BaseRoute]:
    return [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
