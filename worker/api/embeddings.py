"""GET /api/embeddings/stats: the embedding model, coverage and background queue."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from worker.api.endpoint import Call, Endpoint
from worker.ops import status
from worker.settings import Settings
from worker.store import vectors

TAG = "embeddings"


async def embedding_stats(call: Call) -> Any:
    stats = await status.embedding_stats(call.cairn)
    return {**stats, "import": await status.import_progress(call.cairn)}


async def reindex(call: Call) -> Any:
    """Forget every vector; the background embedder rebuilds them all."""
    cairn = call.cairn
    if cairn.embeddings is not None:
        removed = await anyio.to_thread.run_sync(cairn.embeddings.reindex)
    else:
        removed = await cairn.store.write(vectors.clear)
    return {"removed": removed, **(await status.embedding_stats(cairn))}


STATS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "model": {"type": "string"},
        "dimensions": {"type": ["integer", "null"]},
        "coverage": {"type": "number"},
        "queue_depth": {"type": "integer"},
        "import": {
            "type": ["object", "null"],
            "description": "an import's items being embedded: {embedded, items, left, "
            "seconds_left, status, text}; null when none is under way",
        },
        "status": {
            "type": "string",
            "enum": ["disabled", "starting", "loading", "indexing", "ready", "unavailable"],
        },
    },
}


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "GET",
            "/api/embeddings/stats",
            embedding_stats,
            "Embedding model, dimensions, coverage (0..1), queue depth and status",
            TAG,
            response=STATS,
        ),
        Endpoint(
            "POST",
            "/api/embeddings/reindex",
            reindex,
            "Re-embed every item in the background (progress: GET /api/embeddings/stats)",
            TAG,
            body=None,
            response=STATS,
        ),
    ]
