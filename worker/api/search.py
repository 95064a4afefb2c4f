"""GET /api/search: keyword, semantic or hybrid search over observations, memories, prompts,
summaries. An explicit search counts as a retrieval of the items it returns."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.ops.search import search_answer, search_query
from worker.retrieval.search import MODES
from worker.settings import Settings

TAG = "search"


async def search_endpoint(call: Call) -> Any:
    return await search_answer(call.cairn, call.query)


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "GET",
            "/api/search",
            search_endpoint,
            "Search observations, memories, prompts and summaries (hybrid by default)",
            TAG,
            query=search_query(s),
            required_query=("q",),
            description=(
                "Keyword (BM25 over analysed terms: code identifiers split, English and "
                "Italian stems, title weighted above body), semantic (cosine over local "
                "embeddings) or hybrid (a weighted sum of the normalised BM25 and cosine "
                "scores, then a rerank by recency, retrieval frequency, importance, "
                "staleness, project and dates named in the query). Text is "
                "always searched as plain words. When nothing is relevant, `refused` is true "
                "and `hits` is empty. `explain=true` adds each signal's contribution."
            ),
            response={
                "type": "object",
                "properties": {
                    "hits": {"type": "array", "items": {"type": "object"}},
                    "refused": {"type": "boolean"},
                    "mode": {"type": "string", "enum": list(MODES)},
                },
            },
        )
    ]
