"""Context answers: the Markdown a hook injects, within a budget (GET /api/context, its preview and
the context page). Never counts as a retrieval (items cannot keep themselves alive by being
injected)."""

from __future__ import annotations

import time
from typing import Any

from worker.container import Cairn
from worker.ops.fields import SESSION_ID, project_field
from worker.retrieval.context_builder import ContextRequest, build_context
from worker.schema import Schema
from worker.settings import Settings

MAX_BUDGET = 20_000


def context_query(s: Settings) -> dict[str, Schema]:
    return {
        "project": project_field(s),
        "query": {
            "type": "string",
            "maxLength": s.search.max_query_chars,
            "description": "The user's prompt; absent = session-start context",
        },
        "session_id": SESSION_ID,
        "budget": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_BUDGET,
            "description": (
                f"Token budget (default {s.context.session_tokens} at session start, "
                f"{s.context.prompt_tokens} for a prompt)"
            ),
        },
        "source": {
            "type": "string",
            "maxLength": 40,
            "description": "SessionStart source: startup|resume|clear|compact|fork",
        },
    }


async def context_answer(cairn: Cairn, qp: dict[str, Any], *, preview: bool) -> dict[str, Any]:
    """The context for validated query parameters (`context_query`); `preview` adds each item's
    score, signals and token count and records nothing."""
    request = ContextRequest(
        project=qp["project"],
        query=qp.get("query"),
        session_id=qp.get("session_id"),
        budget=qp.get("budget"),
        source=qp.get("source"),
        preview=preview,
        reader=cairn.reader,
    )
    started = time.perf_counter()
    answer = await build_context(
        cairn.store, cairn.settings, cairn.embeddings, request, keywords=cairn.keywords
    )
    if not preview:
        kind = "prompt" if (request.query or "").strip() else "session_start"
        cairn.metrics.context(kind, time.perf_counter() - started, int(answer["tokens"]))
    return answer
