"""Hybrid search on SQLite and on PostgreSQL, same machine, same corpus, same calls (in process).

Per backend: write N observations (batches, the hook path through the store) and N/10 memories,
store a vector for each (random unit vectors of 384 dims under the fake embedder's model id:
brute-force cosine costs the same whatever they hold), then time what a worker does at start,
loading the in-memory keyword index (on PostgreSQL the reader analyses each item's words, as
SQLite's triggers did at write time) and the vectors, and per query: hybrid and keyword search
p50/p95 (`worker.retrieval.search.search`, the query embedded by the fake embedder), and the
time for an item written by a second store (another worker) to be found by the first's next
search. PostgreSQL is a throwaway local server (tests/pg.py) over loopback TCP, fsync off.

    python bench/search_backends.py [--items 20000] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import percentile, report
from tests import pg
from worker.retrieval.embedder import FakeEmbedder
from worker.retrieval.keyword_index import KeywordIndex
from worker.retrieval.search import SearchRequest, search
from worker.retrieval.service import EmbeddingService
from worker.settings import load_settings
from worker.store import Store, memories, observations, projects
from worker.store import vectors as vector_q
from worker.store.pg import PgStore

DIM = 384
# One line of words reads better than one word a line.
WORDS = (  # noqa: SIM905
    "deploy nginx reload cache invalidation retry backoff parser token refresh session cookie "
    "migration schema index query plan timeout race deadlock pool connection webhook billing "
    "invoice refund getUserById parse_config OrderService funzione upload queue worker"
).split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def build(store: Store | PgStore, n: int) -> float:
    rng = random.Random(7)
    started = time.perf_counter()
    for start in range(0, n, 500):
        batch = [
            {
                "project": "/repo",
                "session_id": f"s{i % 40}",
                "type": rng.choice(("note", "command", "file_write")),
                "title": _text(rng, rng.randint(2, 6)),
                "body": _text(rng, rng.randint(5, 60)),
                "files": [f"src/{rng.choice(WORDS)}.py"],
            }
            for i in range(start, min(n, start + 500))
        ]
        store.write_sync(lambda c, b=batch: observations.insert_many(c, b))
    for _ in range(n // 10):
        item = {"kind": "fact", "content": _text(rng, 20), "project": "/repo", "scope": "project"}
        store.write_sync(lambda c, it=item: memories.insert(c, it))
    vectors = np.random.default_rng(1).standard_normal((n + n // 10, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pid = store.read_sync(lambda c: projects.find(c, "/repo"))
    refs = [("observation", i + 1) for i in range(n)] + [("memory", i + 1) for i in range(n // 10)]
    for start in range(0, len(refs), 1000):
        rows = [
            (ref, pid, vector_q.to_blob(vectors[start + i]))
            for i, ref in enumerate(refs[start : start + 1000])
        ]
        store.write_sync(lambda c, r=rows: vector_q.save(c, f"fake-hash-{DIM}", DIM, r))
    return time.perf_counter() - started


def measure(store: Store | PgStore, other: Store | PgStore, n: int, queries: int) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="cairn-bench-backends-"))
    settings = load_settings(home=home, embed_enabled=True)
    out: dict[str, Any] = {"build_s": round(build(store, n), 1)}
    keywords = KeywordIndex()
    started = time.perf_counter()
    store.read_sync(keywords.load)
    out["keyword index load s"] = round(time.perf_counter() - started, 2)
    service = EmbeddingService(settings, store, factory=lambda: FakeEmbedder(DIM))
    started = time.perf_counter()
    service.start()
    assert service.wait_idle(600), service.status()
    out["vectors load s"] = round(time.perf_counter() - started, 2)
    rng = random.Random(3)

    def run(query: str, mode: str) -> list[Any]:
        request = SearchRequest(query=query, project="/repo", mode=mode, limit=10)  # type: ignore[arg-type]
        outcome = anyio.run(partial(search, keywords=keywords), store, settings, service, request)
        return [c.ref for c in outcome.hits]

    for mode in ("hybrid", "keyword"):
        samples = []
        for _ in range(queries):
            query = _text(rng, rng.randint(2, 5))
            started = time.perf_counter()
            run(query, mode)
            samples.append((time.perf_counter() - started) * 1000)
        out[f"{mode} search p50 ms"] = round(percentile(samples, 50), 2)
        out[f"{mode} search p95 ms"] = round(percentile(samples, 95), 2)
    # Another store writes an item: how long until this one's next search finds it.
    seen = []
    for i in range(20):
        word = f"zebra{i}quokka"
        item = {"project": "/repo", "type": "note", "title": word, "body": ""}
        other.write_sync(lambda c, it=item: observations.insert(c, it))
        started = time.perf_counter()
        while not run(word, "keyword"):
            assert time.perf_counter() - started < 10
        seen.append((time.perf_counter() - started) * 1000)
    out["another store's write found after ms p95"] = round(percentile(seen, 95), 2)
    anyio.run(service.stop)
    return out


@contextmanager
def postgres_database() -> Iterator[str | None]:
    """A new database's URL on a throwaway local server, or None where none is installed."""
    found = pg.find_binaries()
    if not found:
        yield None
        return
    server = pg.started(found[0])
    try:
        with server.database() as url:
            yield url
    finally:
        server.stop()


def main() -> int:
    quick = os.environ.get("CAIRN_BENCH_QUICK") == "1"
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=5000 if quick else 20000)
    parser.add_argument("--queries", type=int, default=50 if quick else 200)
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {"postgres": pg.SKIP_REASON}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = Store(Path(tmp) / "cairn.db")
        sqlite.open()
        # On SQLite the other writer is the same store (one worker per file).
        results["sqlite"] = measure(sqlite, sqlite, args.items, args.queries)
        sqlite.close()
    with postgres_database() as url:
        if url is not None:
            stores = PgStore(url), PgStore(url)  # two workers of one team database
            for store in stores:
                store.open()
            notes["postgres"] = f"{pg.find_binaries()[0].version}; {stores[0].vector_search}"
            results["postgres"] = measure(*stores, args.items, args.queries)
            for store in stores:
                store.close()
    report(
        "search_backends",
        f"search, {args.items} observations + {args.items // 10} memories, {args.queries} queries",
        [(f"{name}: {k}", v, "", None) for name, got in results.items() for k, v in got.items()],
        {"items": args.items, "queries": args.queries, "backends": notes, "results": results},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
