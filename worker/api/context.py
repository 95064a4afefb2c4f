"""GET /api/context and /api/context/preview: the Markdown a hook injects, within a budget.

Never counts as a retrieval (items cannot keep themselves alive by being injected).
"""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.ops.context import context_answer, context_query
from worker.schema import Schema
from worker.settings import Settings

TAG = "context"


async def get_context(call: Call) -> Any:
    return await context_answer(call.cairn, call.query, preview=False)


async def preview_context(call: Call) -> Any:
    return await context_answer(call.cairn, call.query, preview=True)


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
