"""Feed: everything agents did, newest first, live over SSE; each item labelled with its agent;
filters, pause, older pages."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from worker.agents import AGENTS, NAMES
from worker.errors import CairnError, NotFound
from worker.ops.lifecycle import forget_observation, set_observation_archived
from worker.ops.status import import_progress
from worker.pages.render import render
from worker.store import feed, projects
from worker.store.errors import StoreError


def filters(request: Request) -> tuple[str, str, str]:
    """(project, type, agent) from the query; an unknown type or agent means 'everything', as
    on the sessions page."""
    project = request.query_params.get("project", "")[:1024]
    type_ = request.query_params.get("type", "")
    agent = request.query_params.get("agent", "")
    return project, type_ if type_ in feed.FILTERS else "", agent if agent in AGENTS else ""


def page_context(
    items: list[dict[str, Any]],
    cursor: tuple[int, str, int] | None,
    project: str,
    type_: str,
    agent: str,
) -> dict[str, Any]:
    more = urlencode(
        {k: v for k, v in (("project", project), ("type", type_), ("agent", agent)) if v}
        | {"cursor": feed.encode_cursor(cursor) or ""}
    )
    return {
        "items": items,
        "next_cursor": feed.encode_cursor(cursor),
        "more_query": more,
        "project": project,
        "type": type_,
        "agent": agent,
    }


def matches(row: dict[str, Any], project: str, type_: str, agent: str) -> bool:
    """Whether a live entry belongs on a feed with these filters (as `feed.stream` reads them)."""
    return (
        (not project or row["project"] == project)
        and (not type_ or type_ in (row["type"], row["kind"]))
        and (not agent or row["agent"] == agent)
    )


async def feed_page(request: Request) -> Response:
    cairn = request.state.cairn
    project, type_, agent = filters(request)
    limit = cairn.settings.limits.page_size
    items, cursor = await cairn.store.read(
        lambda c: feed.stream(
            c,
            visible_to=cairn.reader,
            project=project or None,
            type_=type_ or None,
            agent=agent or None,
            limit=limit,
        )
    )
    all_projects = await cairn.store.read(projects.list_all)
    return render(
        request,
        "feed.html",
        {
            **page_context(items, cursor, project, type_, agent),
            "title": "Feed",
            "active": "feed",
            "projects": all_projects,
            "types": feed.FILTERS,
            "agents": NAMES,
            "can_archive": True,
            "import_progress": await import_progress(cairn),
        },
    )


async def feed_items(request: Request) -> Response:
    """An older page (the 'Load older' button replaces itself with it)."""
    cairn = request.state.cairn
    project, type_, agent = filters(request)
    before = feed.decode_cursor(request.query_params.get("cursor"))
    limit = cairn.settings.limits.page_size
    items, cursor = await cairn.store.read(
        lambda c: feed.stream(
            c,
            visible_to=cairn.reader,
            project=project or None,
            type_=type_ or None,
            agent=agent or None,
            before=before,
            limit=limit,
        )
    )
    context = page_context(items, cursor, project, type_, agent)
    context["can_archive"] = True
    return render(request, "_feed_page.html", context)


async def feed_item(request: Request) -> Response:
    """One rendered entry for a live event; empty when it does not match the filters."""
    cairn = request.state.cairn
    kind = request.path_params["kind"]
    item_id = request.path_params["id"]
    row = await cairn.store.read(lambda c: feed.item(c, kind, item_id, visible_to=cairn.reader))
    if row is None or not matches(row, *filters(request)):
        return HTMLResponse("", headers={"Cache-Control": "no-store"})
    event = request.query_params.get("event", "")
    label = {"memory.updated": "updated"}.get(event, "new")
    return render(
        request,
        "_feed_item.html",
        {
            "item": row,
            "live_event": label,
            "can_archive": True,
        },
    )


async def observation_action(request: Request) -> Response:
    """Archive, restore or forget one observation through the lifecycle API; the new entry."""
    oid = request.path_params["id"]
    action = request.path_params["action"]
    cairn = request.state.cairn
    error = ""
    if action == "forget":
        try:
            await forget_observation(cairn, oid)
        except NotFound:
            pass
        except (CairnError, StoreError) as exc:
            error = exc.message
        if not error:
            return HTMLResponse(
                f'<li class="feed-item gone" id="observation-{oid}" role="status">'
                f"<p>Observation #{oid} was forgotten.</p></li>",
                headers={"Cache-Control": "no-store"},
            )
    elif action in ("archive", "restore"):
        try:
            await set_observation_archived(cairn, oid, archived=action == "archive")
        except (CairnError, StoreError) as exc:
            error = exc.message
    else:
        raise NotFound(f"no observation action {action!r}", field="action")
    row = await cairn.store.read(
        lambda c: feed.item(c, "observation", oid, visible_to=cairn.reader)
    )
    if row is None:
        raise NotFound(f"observation {oid} does not exist", field="id")
    return render(
        request,
        "_feed_item.html",
        {
            "item": row,
            "open": True,
            "can_archive": True,
            "error": error,
        },
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/", feed_page, methods=["GET"]),
        Route("/feed/items", feed_items, methods=["GET"]),
        Route("/feed/item/{kind}/{id:int}", feed_item, methods=["GET"]),
        Route("/feed/observation/{id:int}/{action}", observation_action, methods=["POST"]),
    ]
