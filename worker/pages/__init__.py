"""The dashboard: server-rendered pages and htmx fragments, plus its static files."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from worker.errors import NotFound
from worker.paths import data_dir

# htmx comes from the installed django-js-lib-htmx package, never a CDN. Its ext/sse.js is the
# htmx 1 extension (it warns in the console under htmx 2), so the matching htmx 2 extension
# (htmx-ext-sse 2.2.2, tested against htmx 2.0.x) ships in dashboard/static/vendor/.
VENDOR_FILES = {"htmx.min.js": "htmx.min.js"}
SHIPPED_VENDOR_FILES = {"sse.js": "htmx-ext-sse.js"}


def htmx_dir() -> Path:
    spec = importlib.util.find_spec("js_lib_htmx")
    if spec is None or spec.origin is None:
        raise NotFound("htmx is not installed (pip package django-js-lib-htmx)")
    return Path(spec.origin).resolve().parent / "static" / "htmx"


async def vendor_file(request: Request) -> Response:
    name = request.path_params["name"]
    if name in SHIPPED_VENDOR_FILES:
        path = data_dir("dashboard") / "static" / "vendor" / SHIPPED_VENDOR_FILES[name]
    elif name in VENDOR_FILES:
        path = htmx_dir() / VENDOR_FILES[name]
    else:
        raise NotFound(f"no vendored file {name!r}")
    return FileResponse(
        path,
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )


async def favicon(request: Request) -> Response:
    return FileResponse(
        data_dir("dashboard") / "static" / "favicon.svg", media_type="image/svg+xml"
    )


def routes(limit: Callable[[Any], Any]) -> list[BaseRoute]:
    """Every dashboard route; `limit` applies the login rate limit."""
    from worker.pages import (
        context_preview,
        feed,
        login,
        memories,
        outage,
        search,
        sessions,
        settings_page,
        stats,
    )

    return [
        *login.routes(limit),
        *feed.routes(),
        *search.routes(),
        *sessions.routes(),
        *memories.routes(),
        *context_preview.routes(),
        *stats.routes(),
        *settings_page.routes(),
        *outage.routes(),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Route("/static/vendor/{name}", vendor_file, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=data_dir("dashboard") / "static")),
    ]
