"""GET /api/report: the activity report (Markdown, or JSON with the figures and the Markdown)."""

from __future__ import annotations

from typing import Any

from starlette.responses import PlainTextResponse

from worker.api.endpoint import Call, Endpoint
from worker.ops.report import make_report
from worker.settings import Settings

TAG = "report"


async def report(call: Call) -> Any:
    qp = call.query
    s = call.cairn.settings
    data = await call.cairn.store.read(
        lambda c: make_report(
            c, s, qp.get("project"), qp.get("since"), qp.get("until"), reader=call.cairn.reader
        )
    )
    if qp.get("format", "json") == "markdown":
        return PlainTextResponse(data["markdown"], media_type="text/markdown; charset=utf-8")
    return data


def endpoints(s: Settings) -> list[Endpoint]:
    span = {
        "type": "string",
        "maxLength": 64,
        "description": "ISO 8601 date/date-time, or a span back from now: 30m, 24h, 7d, 2w",
    }
    return [
        Endpoint(
            "GET",
            "/api/report",
            report,
            "Activity report: sessions, files changed most, what was learned, decisions made",
            TAG,
            query={
                "project": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "description": "Project key or unique name; all projects when absent",
                },
                "since": span,
                "until": span,
                "format": {"type": "string", "enum": ["json", "markdown"]},
            },
            extra_statuses=(404,),
            extra_media_types=("text/markdown",),
            description=f"Default window: the last {s.sessions.report_default_days} days.",
        ),
    ]
