"""GET /api/embeddings/stats: the embedding model, coverage and background queue."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.api.search import embedding_service
from worker.retrieval.service import stats
from worker.settings import Settings
from worker.store import vectors

TAG = "embeddings"


async def embedding_stats(call: Call) -> Any:
    cairn = call.cairn
    service = embedding_service(cairn)
    model = service.status()["model"] if service is not None else cairn.settings.embed_model
    counts = await cairn.store.read(lambda c: vectors.coverage_counts(c, str(model)))
    return stats(service, cairn.settings, counts)


async def reindex(call: Call) -> Any:
    """Forget every vector; the background embedder rebuilds them all."""
    cairn = call.cairn
    removed = await cairn.store.write(vectors.clear)
    service = embedding_service(cairn)
    if service is not None:
        service.reset_index()
    model = service.status()["model"] if service is not None else cairn.settings.embed_model
    counts = await cairn.store.read(lambda c: vectors.coverage_counts(c, str(model)))
    return {"removed": removed, **stats(service, cairn.settings, counts)}


STATS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "model": {"type": "string"},
        "dimensions": {"type": ["integer", "null"]},
        "coverage": {"type": "number"},
        "queue_depth": {"type": "integer"},
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
