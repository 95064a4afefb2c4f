"""Context preview: exactly what the hooks would inject for a project (and prompt), item by item."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from worker.errors import CairnError
from worker.ops.context import context_answer, context_query
from worker.pages.forms import query_strings
from worker.pages.render import is_htmx, render
from worker.schema import coerce_params
from worker.store import projects
from worker.store.errors import StoreError

SOURCES = ("startup", "resume", "compact", "clear")


async def context_page(request: Request) -> Response:
    cairn = request.state.cairn
    qp = request.query_params
    project = qp.get("project", "")[:1024]
    query = qp.get("query", "")[:2000]
    source = qp.get("source", "startup")
    source = source if source in SOURCES else "startup"
    budget_text = qp.get("budget", "")
    budget = int(budget_text) if budget_text.isdigit() and len(budget_text) < 7 else None
    preview: dict[str, Any] | None = None
    error = ""
    if project:
        params = {"project": project, "query": query, "budget": budget, "source": source}
        try:
            checked = coerce_params(context_query(cairn.settings), query_strings(params))
            preview = await context_answer(cairn, checked, preview=True)
        except (CairnError, StoreError) as exc:
            error = exc.message
    default_budget = (
        cairn.settings.context.prompt_tokens if query else cairn.settings.context.session_tokens
    )
    context = {
        "title": "Context preview",
        "active": "context",
        "project": project,
        "query": query,
        "source": source,
        "sources": SOURCES,
        "budget": budget or "",
        "default_budget": default_budget,
        "preview": preview,
        "error": error,
    }
    if is_htmx(request) and request.headers.get("hx-target") == "context-result":
        return render(request, "_context_result.html", context)
    context["projects"] = await cairn.store.read(projects.list_all)
    return render(request, "context.html", context)


def routes() -> list[BaseRoute]:
    return [Route("/context", context_page, methods=["GET"])]
