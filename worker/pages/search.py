"""Search: one box, mode/project/type filters, highlighted hits and why each one ranked."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from worker.errors import CairnError
from worker.ops.search import search_answer, search_query
from worker.pages.forms import query_strings
from worker.pages.render import is_htmx, render
from worker.retrieval.search import MODES
from worker.schema import coerce_params
from worker.store import observations, projects
from worker.store.errors import StoreError
from worker.store.items import KINDS

STEP = 20
MAX_LIMIT = 200


def _params(request: Request) -> dict[str, Any]:
    qp = request.query_params
    mode = qp.get("mode", "hybrid")
    kind = qp.get("kind", "")
    type_ = qp.get("type", "")
    limit_text = qp.get("limit", "")
    limit = int(limit_text) if limit_text.isdigit() else STEP
    return {
        "q": qp.get("q", "")[:1000],
        "mode": mode if mode in MODES else "hybrid",
        "project": qp.get("project", "")[:1024],
        "kind": kind if kind in KINDS else "",
        "type": type_ if type_ in observations.TYPES else "",
        "include_archived": qp.get("include_archived") == "1",
        "limit": max(1, min(limit, MAX_LIMIT)),
    }


async def search_page(request: Request) -> Response:
    cairn = request.state.cairn
    p = _params(request)
    hits: list[dict[str, Any]] = []
    refused = False
    error = ""
    used_mode = p["mode"]
    embeddings = ""
    if p["q"].strip():
        params = {
            "q": p["q"],
            "mode": p["mode"],
            "project": p["project"],
            "kind": p["kind"],
            "type": p["type"],
            "limit": p["limit"],
            "explain": True,
            "include_archived": p["include_archived"] or None,
        }
        try:
            query = coerce_params(search_query(cairn.settings), query_strings(params), ("q",))
            answer = await search_answer(cairn, query)
        except (CairnError, StoreError) as exc:
            error = exc.message
        else:
            hits = list(answer["hits"])
            refused = bool(answer["refused"])
            used_mode = str(answer["mode"] or p["mode"])
            embeddings = str(answer["embeddings"] or "")
    more_query = ""
    if len(hits) >= p["limit"] and p["limit"] < MAX_LIMIT:
        more_query = urlencode(
            {
                k: v
                for k, v in {
                    **p,
                    "limit": p["limit"] + STEP,
                    "include_archived": "1" if p["include_archived"] else "",
                }.items()
                if v not in ("", None, False)
            }
        )
    context = {
        "title": f"Search: {p['q']}" if p["q"] else "Search",
        "active": "search",
        "p": p,
        "hits": hits,
        "refused": refused,
        "error": error,
        "used_mode": used_mode,
        "embeddings": embeddings,
        "modes": MODES,
        "kinds": KINDS,
        "types": observations.TYPES,
        "more_query": more_query,
    }
    if is_htmx(request) and request.headers.get("hx-target") == "search-results":
        return render(request, "_search_results.html", context)
    context["projects"] = await cairn.store.read(projects.list_all)
    return render(request, "search.html", context)


def routes() -> list[BaseRoute]:
    return [Route("/search", search_page, methods=["GET"])]
