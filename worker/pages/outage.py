"""The page a browser gets while the database cannot be reached, and the fragment it polls until
the database answers again (then the browser reloads the page it asked for).

The JSON API is not touched: its 503 is what tells a hook to spool its event.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from worker.auth import wants_html
from worker.ops.status import status_report
from worker.pages.render import NAV, is_htmx, render
from worker.store.errors import StoreUnavailable

# How often the outage page asks whether the database is back. Each check is one status probe
# (one at a time, at most 3 s: worker/ops/status.py), so a tab left open costs the database one
# connection attempt per interval.
RETRY_SECONDS = 5
POLL_PATH = "/database-status"


def _nav_key(path: str) -> str:
    """The navigation entry of the page that failed, so the page still shows where one is."""
    for key, href, _label in NAV:
        if path == href or (href != "/" and path.startswith(href + "/")):
            return key
    return ""


def _facts(request: Request, error: str, waiting: Any) -> dict[str, Any]:
    store = request.state.cairn.store
    return {
        "team": store.backend == "postgres",
        "where": store.where,  # a team database's URL with its password masked
        "error": error,
        "waiting": waiting,
        "poll_path": POLL_PATH,
        "retry_seconds": RETRY_SECONDS,
    }


def wants_whole_page(request: Request) -> bool:
    """A browser asking for a whole page: it gets the outage page rather than a JSON error.

    Fragments (htmx) keep the JSON error, which the dashboard script shows as a notice in the
    page already on screen; so does every /api/ route.
    """
    return wants_html(request.headers, request.url.path) and not is_htmx(request)


def outage_page(request: Request, exc: StoreUnavailable) -> Response:
    """503 with the page: what cannot be reached and why, what is kept meanwhile, and a retry."""
    spool = request.state.cairn.spool
    waiting = spool.status()["waiting_events"] if spool is not None else None
    facts = _facts(request, exc.message, waiting)
    query = request.url.query
    return render(
        request,
        "database_down.html",
        {
            "title": "Team database unreachable" if facts["team"] else "Database unavailable",
            "active": _nav_key(request.url.path),
            "retry_href": request.url.path + (f"?{query}" if query else ""),
            **facts,
        },
        status=503,
        headers={"Retry-After": str(RETRY_SECONDS)},
    )


async def database_status(request: Request) -> Response:
    """The outage page's poll: the facts again while the database is down; once it answers,
    HX-Refresh makes htmx reload the page the browser is on."""
    report = await status_report(request.state.cairn)
    database = report["database"]
    if database["reachable"]:
        back = '<p id="database-down" role="status">The database answers again; reloading.</p>'
        return HTMLResponse(back, headers={"HX-Refresh": "true", "Cache-Control": "no-store"})
    waiting = (report["services"].get("spool") or {}).get("waiting_events")
    return render(request, "_database_down.html", _facts(request, database["error"], waiting))


def routes() -> list[BaseRoute]:
    return [Route(POLL_PATH, database_status, methods=["GET"])]
