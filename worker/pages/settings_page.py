"""Settings: effective configuration (never the token), model status, rotate the token, run
decay and compression and show what they did."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from worker.errors import CairnError
from worker.ops.lifecycle import run_compress, run_decay
from worker.ops.status import embedding_stats, status_report
from worker.pages.forms import read_form
from worker.pages.login import with_session_cookie
from worker.pages.render import render
from worker.store.errors import StoreError

NOT_SET = "not set"


def _set_only(values: Any) -> Any:
    """A mapping without its unset (None) fields."""
    if not isinstance(values, dict):
        return values
    return {k: v for k, v in values.items() if v is not None}


JOBS = {"decay": (run_decay, "Decay"), "compress": (run_compress, "Compression")}


async def settings_page(request: Request) -> Response:
    cairn = request.state.cairn
    body = await status_report(cairn)
    # With the team database unreachable the page still shows the worker and why (no coverage).
    embed = await embedding_stats(cairn) if body["database"]["reachable"] else None
    # Values that are not set show as such, never as Python's None (or an empty box).
    config = {
        k: NOT_SET if v is None or v == "" else v for k, v in cairn.settings.public_dict().items()
    }
    services = body.get("services") or {}
    body["services"] = {name: _set_only(service) for name, service in services.items()}
    return render(
        request,
        "settings.html",
        {
            "title": "Settings",
            "active": "settings",
            "config": sorted(config.items()),
            "status": body,
            "embed": _set_only(embed),
            "rotated": request.query_params.get("rotated") == "1",
            "token_path": str(cairn.settings.token_path),
        },
    )


async def rotate_token(request: Request) -> Response:
    """New token on disk; this browser gets the matching cookie, every other one is logged out."""
    cairn = request.state.cairn
    cairn.tokens.rotate()
    response = Response(status_code=204, headers={"HX-Redirect": "/settings?rotated=1"})
    return with_session_cookie(response, cairn)


async def run_job(request: Request) -> Response:
    name = request.path_params["job"]
    if name not in JOBS:
        return render(
            request,
            "not_found.html",
            {"title": "Not found", "what": f"job {name!r}", "back": "/settings"},
            status=404,
        )
    run, label = JOBS[name]
    form = await read_form(request)
    dry_run = form.get("dry_run") == "1"
    result: dict[str, Any] | None = None
    error = ""
    try:
        result = await run(request.state.cairn, {"dry_run": dry_run})
    except (CairnError, StoreError) as exc:
        error = exc.message
    if dry_run:
        label = f"{label} preview (nothing changed)"
    return render(
        request,
        "_job_result.html",
        {
            "job": name,
            "label": label,
            "ok": result is not None,
            "result": result,
            "error": error,
        },
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/settings", settings_page, methods=["GET"]),
        Route("/settings/rotate-token", rotate_token, methods=["POST"]),
        Route("/settings/run/{job}", run_job, methods=["POST"]),
    ]
