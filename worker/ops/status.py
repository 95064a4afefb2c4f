"""Status reports: the worker's health, counts and services (GET /api/status, the settings page)
and the embedding model's coverage and queue (GET /api/embeddings/stats, the stats page)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from worker import __version__
from worker.clock import now_ms, to_iso
from worker.container import Cairn, ImportMark
from worker.retrieval.service import stats
from worker.store import stats as store_stats
from worker.store import vectors
from worker.store.errors import StoreUnavailable

if TYPE_CHECKING:
    from worker.store.backend import Backend


# How long status waits for a team database. A host gone dark (or a hung server) makes each new
# connection wait its connect timeout (10 s), longer than `cairn status` waits for the worker
# (5 s): past this, the report says the database does not answer rather than the CLI saying
# the worker is not running. A local SQLite file is always waited for: slow is not absent.
TEAM_DATABASE_WAIT_S = 3.0


def _database_facts(store: Backend) -> tuple[dict[str, int], int]:
    return store.read_sync(store_stats.counts), store.db_size_bytes()


async def status_report(cairn: Cairn) -> dict[str, Any]:
    """The worker's own facts always; the database's counts and size when it answers.

    A team database that cannot be reached does not make the worker unreachable for status: the
    report says so (`ok` false, `database.reachable` false and why, the password masked) next to
    the spool the hooks fill meanwhile, so that `cairn status` and the dashboard can show it. The
    hooks decide by /health and by the 503 of the write they send, not by this report.
    """
    store = cairn.store
    database: dict[str, Any] = {**store.describe(), "reachable": True}
    counts: dict[str, int] | None = None
    size: int | None = None
    wait = None if store.backend == "sqlite" else TEAM_DATABASE_WAIT_S
    if cairn.status_probes is None:
        cairn.status_probes = anyio.CapacityLimiter(1)
    try:
        with anyio.fail_after(wait):
            # A probe stuck in a connect is left to end by itself (it holds the one slot: the
            # next status waits for it, up to `wait`, rather than pile up threads).
            counts, size = await anyio.to_thread.run_sync(
                _database_facts, store, abandon_on_cancel=True, limiter=cairn.status_probes
            )
    except StoreUnavailable as exc:
        database.update(reachable=False, error=exc.message)
    except TimeoutError:
        database.update(
            reachable=False,
            error=f"the team database {store.where} does not answer (no reply in {wait:g} s)",
        )
    # Every damaged file moved aside (this run or an earlier one) stays reported until removed.
    moved = store.corrupt_copies()
    recovered = store.recovered_from or (moved[-1] if moved else None)
    return {
        "ok": database["reachable"],
        "version": __version__,
        "pid": os.getpid(),
        "port": cairn.port,
        "started_at": to_iso(cairn.started_at_ms),
        "uptime_seconds": round((now_ms() - cairn.started_at_ms) / 1000, 1),
        "counts": counts,
        "db_path": store.where,
        "database": database,
        "db_size_bytes": size,
        "recovered_from": str(recovered) if recovered else None,
        "corrupt_databases": [str(p) for p in moved],
        "sse_clients": cairn.events.client_count,
        "services": {name: service.status() for name, service in cairn.services.items()},
    }


async def embedding_stats(cairn: Cairn) -> dict[str, Any]:
    service = cairn.embeddings
    model = service.status()["model"] if service is not None else cairn.settings.embedding.model
    counts = await cairn.store.read(lambda c: vectors.coverage_counts(c, str(model)))
    return stats(service, cairn.settings, counts)


async def note_import(cairn: Cairn) -> None:
    """An import's batch arrived: remember where embedding stood, once per import."""
    service = cairn.embeddings
    if cairn.import_mark is not None or service is None or not cairn.settings.embedding.enabled:
        return
    model = str(service.status()["model"])
    done, _total = await cairn.store.read(lambda c: vectors.coverage_counts(c, model))
    cairn.import_mark = ImportMark(done)


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return f"~{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"~{round(seconds / 60)} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"~{hours} h {minutes:02d} min"


def progress_text(done: int, items: int, status: str, rate: float | None, error: str | None) -> str:
    """'embedding 3,120 of 9,800 imported items, ~2 min left' and its variants."""
    head = f"embedding {done:,} of {items:,} imported items"
    if status == "unavailable":
        return (
            f"{head}: the model is unavailable ({error or 'no reason given'}); keyword search works"
        )
    if status in ("starting", "loading"):
        return f"{head}: the model is loading; keyword search works meanwhile"
    if not rate:
        return f"{head}; keyword search works meanwhile"
    return f"{head}, {duration_text((items - done) / rate)} left"


async def import_progress(cairn: Cairn) -> dict[str, Any] | None:
    """The embedding of an import's items while it is under way (None when none is)."""
    mark = cairn.import_mark
    if mark is None:
        return None
    embed = await embedding_stats(cairn)
    left = int(embed["items"]) - int(embed["embedded"])
    if embed["status"] == "disabled" or left <= 0:
        cairn.import_mark = None
        return None
    items = max(left, int(embed["items"]) - mark.embedded)
    done = items - left
    rate = embed.get("items_per_second")
    return {
        "embedded": done,
        "items": items,
        "left": left,
        "seconds_left": round(left / rate, 1) if rate else None,
        "status": embed["status"],
        "text": progress_text(done, items, str(embed["status"]), rate, embed.get("error")),
    }
