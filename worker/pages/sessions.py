"""Sessions: the list, one session's prompts and observations on one timeline, and the
project timeline around a moment."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from worker.agents import AGENTS, NAMES
from worker.clock import now_ms
from worker.errors import CairnError, NotFound
from worker.ops.sessions import session_detail as read_session
from worker.pages.render import epoch_ms, is_htmx, parse_time, render
from worker.schema import validate
from worker.store import feed, projects, sessions
from worker.store.errors import StoreError


def shown_status(session: dict[str, Any], idle_minutes: int, now: int) -> str:
    """'idle' for an active session quiet for `idle_minutes` (its SessionEnd may never come:
    the agent crashed or the machine slept), else the stored status."""
    if session.get("status") != "active":
        return str(session.get("status") or "")
    last = epoch_ms(session.get("last_activity_at") or session.get("started_at"))
    return "idle" if last and now - last >= idle_minutes * 60_000 else "active"


def with_shown_status(request: Request, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    idle_minutes = request.state.cairn.settings.dashboard.session_idle_minutes
    now = now_ms()
    return [{**row, "shown_status": shown_status(row, idle_minutes, now)} for row in rows]


async def sessions_page(request: Request) -> Response:
    cairn = request.state.cairn
    project = request.query_params.get("project", "")[:1024]
    status = request.query_params.get("status", "")
    status = status if status in ("active", "ended") else ""
    agent = request.query_params.get("agent", "")
    agent = agent if agent in AGENTS else ""
    cursor = request.query_params.get("cursor") or None
    limit = cairn.settings.limits.page_size
    items, next_cursor = await cairn.store.read(
        lambda c: sessions.list_page(
            c,
            project=project or None,
            status=status or None,
            before=cursor,
            limit=limit,
            visible_to=cairn.reader,
            agent=agent or None,
        )
    )
    more = None
    if next_cursor:
        more = urlencode(
            {k: v for k, v in (("project", project), ("status", status), ("agent", agent)) if v}
            | {"cursor": next_cursor}
        )
    context: dict[str, Any] = {
        "title": "Sessions",
        "active": "sessions",
        "items": with_shown_status(request, items),
        "more_query": more,
        "project": project,
        "status": status,
        "agent": agent,
        "agents": NAMES,
    }
    if is_htmx(request) and cursor:
        return render(request, "_session_rows.html", context)
    context["projects"] = await cairn.store.read(projects.list_all)
    return render(request, "sessions.html", context)


def session_timeline(detail: dict[str, Any]) -> list[dict[str, Any]]:
    """Prompts and observations of one session merged in time order."""
    entries: list[tuple[float, int, dict[str, Any]]] = []
    for prompt in detail.get("prompts", []):
        at = parse_time(prompt.get("created_at"))
        entries.append((at.timestamp() if at else 0, 0, {"kind": "prompt", **prompt}))
    for obs in detail.get("observations", []):
        at = parse_time(obs.get("created_at"))
        entries.append((at.timestamp() if at else 0, 1, {"kind": "observation", **obs}))
    entries.sort(key=lambda e: (e[0], e[1], e[2].get("id", 0)))
    return [e[2] for e in entries]


async def session_detail(request: Request) -> Response:
    sid = request.path_params["session_id"]
    detail: dict[str, Any] = {}
    error = ""
    try:
        validate({"type": "string"}, sid, "session_id")  # NUL / lone surrogates: as the API
        detail = await read_session(request.state.cairn, sid)
    except NotFound:
        return render(
            request,
            "not_found.html",
            {"title": "No such session", "what": f"session {sid}", "back": "/sessions"},
            status=404,
        )
    except (CairnError, StoreError) as exc:
        error = exc.message
    return render(
        request,
        "session.html",
        {
            "title": f"Session {sid[:12]}",
            "active": "sessions",
            "session": with_shown_status(request, [detail])[0] if detail else detail,
            "timeline": session_timeline(detail),
            "error": error,
        },
    )


async def timeline_page(request: Request) -> Response:
    """A project's activity around one moment: what came before and after."""
    cairn = request.state.cairn
    project = request.query_params.get("project", "")[:1024]
    at_text = request.query_params.get("at", "")
    focus = request.query_params.get("focus", "")
    at = int(at_text) if at_text.isdigit() and len(at_text) < 16 else None
    span = min(cairn.settings.limits.page_size, 25)
    reader = cairn.reader

    def read(conn: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if at is None:
            newer: list[dict[str, Any]] = []
            older, _ = feed.stream(conn, visible_to=reader, project=project or None, limit=span)
            return newer, older
        edge = (at, "~", 0)  # '~' sorts after every kind: the focus item counts as 'older'
        newer, _ = feed.stream(
            conn, visible_to=reader, project=project or None, after=edge, limit=span
        )
        older, _ = feed.stream(
            conn, visible_to=reader, project=project or None, before=edge, limit=span
        )
        return list(reversed(newer)), older

    newer, older = await cairn.store.read(read)
    shown = newer + older
    # Paging moves the moment to the newest / oldest item shown (the edge item stays in view).
    later_at = int(shown[0]["at"]) + 1 if newer and len(newer) == span else None
    earlier_at = int(shown[-1]["at"]) if len(older) == span else None
    return render(
        request,
        "timeline.html",
        {
            "title": "Timeline",
            "active": "sessions",
            "project": project,
            "newer": newer,
            "older": older,
            "focus": focus,
            "later_at": later_at if at is not None else None,
            "earlier_at": earlier_at,
        },
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/sessions", sessions_page, methods=["GET"]),
        Route("/sessions/{session_id:path}", session_detail, methods=["GET"]),
        Route("/timeline", timeline_page, methods=["GET"]),
    ]
