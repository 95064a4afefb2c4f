"""Status reports: the worker's health, counts and services (GET /api/status, the settings page)
and the embedding model's coverage and queue (GET /api/embeddings/stats, the stats page)."""

from __future__ import annotations

import os
from typing import Any

from worker import __version__
from worker.clock import now_ms, to_iso
from worker.container import Cairn
from worker.retrieval.service import stats
from worker.store import stats as store_stats
from worker.store import vectors


async def status_report(cairn: Cairn) -> dict[str, Any]:
    counts = await cairn.store.read(store_stats.counts)
    # Every damaged file moved aside (this run or an earlier one) stays reported until removed.
    moved = cairn.store.corrupt_copies()
    recovered = cairn.store.recovered_from or (moved[-1] if moved else None)
    return {
        "ok": True,
        "version": __version__,
        "pid": os.getpid(),
        "port": cairn.port,
        "started_at": to_iso(cairn.started_at_ms),
        "uptime_seconds": round((now_ms() - cairn.started_at_ms) / 1000, 1),
        "counts": counts,
        "db_path": str(cairn.store.path),
        "db_size_bytes": cairn.store.db_size_bytes(),
        "recovered_from": str(recovered) if recovered else None,
        "corrupt_databases": [str(p) for p in moved],
        "sse_clients": cairn.events.client_count,
        "services": {name: service.status() for name, service in cairn.services.items()},
    }


async def embedding_stats(cairn: Cairn) -> dict[str, Any]:
    service = cairn.embeddings
    model = service.status()["model"] if service is not None else cairn.settings.embed_model
    counts = await cairn.store.read(lambda c: vectors.coverage_counts(c, str(model)))
    return stats(service, cairn.settings, counts)
