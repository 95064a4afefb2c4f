"""Memories: list and filter; create, edit, pin, re-weigh, archive, restore, forget; relations.

Reads and changes go through the same operations (worker.ops.memories) as the JSON API, with the
API's body schemas, so the dashboard applies exactly the validation, merging and events an API
client gets."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from worker.errors import BadRequest, CairnError, NotFound
from worker.ops import memories as ops
from worker.ops.relations import memory_relations
from worker.ops.use import item_use
from worker.pages.forms import read_form
from worker.pages.render import is_htmx, render
from worker.schema import validate
from worker.store import memories, projects
from worker.store.errors import StoreError

STATES = ("live", "archived", "all")


def _filters(request: Request) -> dict[str, Any]:
    qp = request.query_params
    kind = qp.get("kind", "")
    state = qp.get("state", "live")
    pinned = qp.get("pinned", "")
    imp = qp.get("importance", "")
    return {
        "project": qp.get("project", "")[:1024],
        "kind": kind if kind in memories.KINDS else "",
        "state": state if state in STATES else "live",
        "pinned": pinned if pinned in ("yes", "no") else "",
        "importance": imp if imp in ("1", "2", "3", "4", "5") else "",
        "text": qp.get("text", "")[:200],
    }


def _query(f: dict[str, Any], before: int | None, limit: int) -> memories.MemoryQuery:
    project = f["project"]
    return memories.MemoryQuery(
        project=project if project not in ("", "__global__") else None,
        scope="global" if project == "__global__" else "all",
        kind=f["kind"] or None,
        pinned={"yes": True, "no": False}.get(f["pinned"]),
        importance_min=int(f["importance"]) if f["importance"] else None,
        archived={"live": False, "archived": True}.get(f["state"]),
        include_archived=f["state"] == "all",
        text=f["text"] or None,
        before_id=before,
        limit=limit,
    )


async def memories_page(request: Request) -> Response:
    cairn = request.state.cairn
    f = _filters(request)
    cursor_text = request.query_params.get("cursor", "")
    before = int(cursor_text) if cursor_text.isdigit() and len(cursor_text) < 19 else None
    limit = cairn.settings.limits.page_size
    items, cursor = await ops.list_memories(cairn, _query(f, before, limit))
    more = None
    if cursor is not None:
        more = urlencode({k: v for k, v in f.items() if v} | {"cursor": str(cursor)})
    context: dict[str, Any] = {
        "title": "Memories",
        "active": "memories",
        "items": items,
        "f": f,
        "more_query": more,
        "kinds": memories.KINDS,
        "can_edit": True,
    }
    if is_htmx(request) and before is not None:
        return render(request, "_memory_list.html", context)
    context["projects"] = await cairn.store.read(projects.list_all)
    context["new_project"] = default_project(f["project"], request, context["projects"])
    return render(request, "memories.html", context)


def default_project(filtered: str, request: Request, known: list[dict[str, Any]]) -> str:
    """Where a memory typed on this page belongs unless the user picks otherwise: the project the
    list is filtered to; else the one of the page the user came from (a `project` in its
    address); else the project with the latest activity. Never "global" by default: a note
    typed for one project became a lesson injected into every other project's sessions."""
    keys = {str(p["key"]) for p in known}
    if filtered == "__global__" or filtered in keys:
        return filtered
    referer = request.headers.get("referer", "")
    came_from = parse_qs(urlsplit(referer).query).get("project", [""])[0] if referer else ""
    if came_from in keys:
        return came_from
    active = [p for p in known if p.get("last_activity_at")]
    if active:
        return str(max(active, key=lambda p: str(p["last_activity_at"]))["key"])
    return str(known[-1]["key"]) if known else "__global__"


async def memory_detail(request: Request) -> Response:
    cairn = request.state.cairn
    mid = request.path_params["id"]
    row = await cairn.store.read(lambda c: memories.get(c, mid))
    if row is None:
        return render(
            request,
            "not_found.html",
            {"title": "No such memory", "what": f"memory #{mid}", "back": "/memories"},
            status=404,
        )
    links = await memory_relations(cairn, mid)
    use = await item_use(cairn, "memory", mid)
    return render(
        request,
        "memory.html",
        {
            "title": f"Memory #{mid}",
            "active": "memories",
            "kinds": memories.KINDS,
            "can_edit": True,
            "memory": row,
            "relations": links.get("relations", []),
            "chain": links.get("chain", []),
            "latest_id": links.get("latest_id", mid),
            "use": use,
        },
    )


async def _card(request: Request, mid: int, error: str = "", status: int = 200) -> Response:
    row = await request.state.cairn.store.read(lambda c: memories.get(c, mid))
    if row is None:
        return HTMLResponse(
            f'<li class="memory gone" id="memory-{mid}"><p>Memory #{mid} no longer exists.</p></li>'
        )
    return render(
        request,
        "_memory_card.html",
        {"m": row, "kinds": memories.KINDS, "can_edit": True, "error": error},
        status=status,
    )


async def memory_card(request: Request) -> Response:
    return await _card(request, request.path_params["id"])


async def memory_edit_form(request: Request) -> Response:
    mid = request.path_params["id"]
    row = await request.state.cairn.store.read(lambda c: memories.get(c, mid))
    if row is None:
        return await _card(request, mid)
    return render(request, "_memory_edit.html", {"m": row, "kinds": memories.KINDS, "error": ""})


def _importance(text: str | None) -> int | None:
    if text is None or text == "":
        return None
    if text not in ("1", "2", "3", "4", "5"):
        raise BadRequest("importance must be 1..5", field="importance")
    return int(text)


def _tags(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


async def _after(request: Request, mid: int, refused: CairnError | StoreError | None) -> Response:
    """The card after a change, with the reason if it was refused."""
    if refused is None:
        return await _card(request, mid)
    return await _card(request, mid, error=refused.message, status=200)


async def memory_update(request: Request) -> Response:
    mid = request.path_params["id"]
    form = await read_form(request)
    changes: dict[str, Any] = {}
    if "content" in form:
        changes["content"] = form["content"]
    if form.get("kind") in memories.KINDS:
        changes["kind"] = form["kind"]
    if "importance" in form:
        changes["importance"] = _importance(form["importance"])
    if "tags" in form:
        changes["tags"] = _tags(form["tags"])
    if "pinned" in form:
        changes["pinned"] = form["pinned"] == "1"
    cairn = request.state.cairn
    refused: CairnError | StoreError | None = None
    try:
        await ops.update(cairn, mid, validate(ops.patch_schema(cairn.settings), changes))
    except (CairnError, StoreError) as exc:
        refused = exc
    if refused is not None and "content" in form:
        row = await request.state.cairn.store.read(lambda c: memories.get(c, mid))
        if row is not None:
            row = {**row, **{k: v for k, v in changes.items() if k != "tags"}}
            return render(
                request,
                "_memory_edit.html",
                {"m": row, "kinds": memories.KINDS, "error": refused.message},
            )
    return await _after(request, mid, refused)


async def memory_action(request: Request) -> Response:
    mid = request.path_params["id"]
    action = request.path_params["action"]
    if action not in ("archive", "restore", "forget"):
        return render(
            request,
            "not_found.html",
            {"title": "Not found", "what": f"memory action {action!r}", "back": "/memories"},
            status=404,
        )
    cairn = request.state.cairn
    if action == "forget":
        try:
            await ops.forget(cairn, mid)
        except NotFound:
            pass
        except (CairnError, StoreError) as exc:
            return await _card(request, mid, error=exc.message)
        return HTMLResponse(
            f'<li class="memory gone" id="memory-{mid}" role="status">'
            f"<p>Memory #{mid} was forgotten.</p></li>"
        )
    refused: CairnError | StoreError | None = None
    try:
        await ops.set_archived(cairn, mid, archived=action == "archive")
    except (CairnError, StoreError) as exc:
        refused = exc
    return await _after(request, mid, refused)


async def memory_create(request: Request) -> Response:
    form = await read_form(request)
    project = form.get("project", "")
    body: dict[str, Any] = {
        "content": form.get("content", ""),
        "tags": _tags(form.get("tags")),
        "pinned": form.get("pinned") == "1",
    }
    importance = _importance(form.get("importance"))
    if importance is not None:
        body["importance"] = importance
    if form.get("kind"):  # else "automatic": inferred from the text, as the REST API does
        body["kind"] = form["kind"]
    if project and project != "__global__":
        body["project"] = project
    else:
        body["scope"] = "global"
    cairn = request.state.cairn
    saved: dict[str, Any] | None = None
    error = ""
    try:
        saved = await ops.create(cairn, validate(ops.create_schema(cairn.settings), body))
    except (CairnError, StoreError) as exc:
        error = exc.message
    all_projects = await cairn.store.read(projects.list_all)
    context: dict[str, Any] = {
        "kinds": memories.KINDS,
        "projects": all_projects,
        "can_edit": True,
        "draft": {"project": project, "kind": form.get("kind", "")},
        "error": "",
        "saved": None,
    }
    if saved is not None:
        context["saved"] = saved
    else:
        context["draft"] = form
        context["error"] = error
    return render(request, "_memory_new_form.html", context)


def routes() -> list[BaseRoute]:
    return [
        Route("/memories", memories_page, methods=["GET"]),
        Route("/memories", memory_create, methods=["POST"]),
        Route("/memories/{id:int}", memory_detail, methods=["GET"]),
        Route("/memories/{id:int}", memory_update, methods=["POST"]),
        Route("/memories/{id:int}/card", memory_card, methods=["GET"]),
        Route("/memories/{id:int}/edit", memory_edit_form, methods=["GET"]),
        Route(
            "/memories/{id:int}/{action:str}",
            memory_action,
            methods=["POST"],
        ),
    ]
