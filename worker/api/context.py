"""GET /api/context and /api/context/preview: the Markdown a hook injects, within a budget.

Never counts as a retrieval (items cannot keep themselves alive by being injected).
"""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.api.search import embedding_service
from worker.ops.fields import SESSION_ID, project_field
from worker.retrieval.context_builder import ContextRequest, build_context
from worker.schema import Schema
from worker.settings import Settings

TAG = "context"
MAX_BUDGET = 20_000


def context_query(s: Settings) -> dict[str, Schema]:
    return {
        "project": project_field(s),
        "query": {
            "type": "string",
            "maxLength": s.search_max_query_chars,
            "description": "The user's prompt; absent = session-start context",
        },
        "session_id": SESSION_ID,
        "budget": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_BUDGET,
            "description": (
                f"Token budget (default {s.context_tokens} at session start, "
                f"{s.prompt_context_tokens} for a prompt)"
            ),
        },
        "source": {
            "type": "string",
            "maxLength": 40,
            "description": "SessionStart source: startup|resume|clear|compact|fork",
        },
    }


def _request(call: Call, preview: bool) -> ContextRequest:
    qp = call.query
    return ContextRequest(
        project=qp["project"],
        query=qp.get("query"),
        session_id=qp.get("session_id"),
        budget=qp.get("budget"),
        source=qp.get("source"),
        preview=preview,
    )


async def get_context(call: Call) -> Any:
    cairn = call.cairn
    return await build_context(
        cairn.store, cairn.settings, embedding_service(cairn), _request(call, preview=False)
    )


async def preview_context(call: Call) -> Any:
    cairn = call.cairn
    return await build_context(
        cairn.store, cairn.settings, embedding_service(cairn), _request(call, preview=True)
    )


RESPONSE: Schema = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object"}},
        "tokens": {"type": "integer"},
        "budget": {"type": "integer"},
        "refused": {"type": "boolean"},
    },
}


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "GET",
            "/api/context",
            get_context,
            "Context to inject: session start (no query) or relevant to a prompt",
            TAG,
            query=context_query(s),
            required_query=("project",),
            response=RESPONSE,
            description=(
                "Markdown within `budget` tokens (a conservative estimate). With `query`: "
                "the items most relevant to the prompt that this session was not given yet; "
                "when nothing is relevant `text` is empty and `refused` true. Records what it "
                "injected for `session_id`; never counts as a retrieval."
            ),
        ),
        Endpoint(
            "GET",
            "/api/context/preview",
            preview_context,
            "The same context with each item's score, signals and token count (records nothing)",
            TAG,
            query=context_query(s),
            required_query=("project",),
            response=RESPONSE,
        ),
    ]
