"""API throughput and keyword-search latency against a real worker over HTTP.

Figures (issue 2): observations accepted per second (single posts from 4 concurrent clients;
batches of 100), keyword search p50/p95 at 10k and 100k observations.
Run: `.venv/bin/python bench/api.py` (add `--quick` for a smaller run). Writes bench/results/api.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import percentile, report, wait_keyword_index  # noqa: E402
from tests.e2e.worker_process import WorkerProcess  # noqa: E402

WORDS = [
    "parser",
    "cache",
    "sqlite",
    "index",
    "migration",
    "token",
    "session",
    "hook",
    "worker",
    "retry",
    "spool",
    "queue",
    "embed",
    "vector",
    "search",
    "ranking",
    "decay",
    "memory",
    "context",
    "budget",
    "prompt",
    "summary",
    "checkpoint",
    "refactor",
    "pytest",
    "failure",
    "config",
    "schema",
    "router",
    "handler",
    "timeout",
    "deadlock",
    "lockfile",
    "docker",
    "build",
    "deploy",
    "frontend",
    "backend",
    "fixture",
    "coverage",
    "lint",
    "format",
    "typing",
    "async",
    "thread",
    "pool",
    "socket",
    "header",
]
# Quiet rate limits: the bench measures the API, not the limiter's 429s.
BENCH_ENV = {
    "CAIRN_RATE_LIMIT_WRITE": "10000000/minute",
    "CAIRN_RATE_LIMIT_READ": "10000000/minute",
    "CAIRN_EMBED_ENABLED": "0",
}


class Conn:
    """One keep-alive HTTP connection with the token (like a hook or dashboard client)."""

    def __init__(self, worker: WorkerProcess) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", worker.port, timeout=60)
        self.headers = {
            "Authorization": f"Bearer {worker.token}",
            "Content-Type": "application/json",
        }

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, body=data, headers=self.headers)
        resp = self.conn.getresponse()
        return resp.status, resp.read()

    def close(self) -> None:
        self.conn.close()


def _vocabulary() -> tuple[list[str], list[float]]:
    """Developer-ish words plus ~4,000 generated ones, with Zipf weights (rank r ~ 1/r): like
    real text, a few words are everywhere and most are rare, so a query's words have a realistic
    spread of document frequencies (a 48-word vocabulary would make every word match half the
    corpus and measure the worst case only)."""
    syllables = [
        "ka",
        "lo",
        "mi",
        "ne",
        "ru",
        "ta",
        "shi",
        "vo",
        "pe",
        "zu",
        "ba",
        "di",
        "fo",
        "gu",
        "he",
        "ji",
    ]
    generated = [a + b for a in syllables for b in syllables]
    generated += [a + b + c for a in syllables for b in syllables[:8] for c in syllables]
    vocab = WORDS + generated
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    cumulative, total = [], 0.0
    for w in weights:
        total += w
        cumulative.append(total)
    return vocab, cumulative


VOCAB, CUM_WEIGHTS = _vocabulary()


def words(rng: random.Random, k: int) -> list[str]:
    return rng.choices(VOCAB, cum_weights=CUM_WEIGHTS, k=k)


def query(rng: random.Random) -> str:
    """1-3 words as people search: drawn from the corpus, skipping its 30 commonest words."""
    picked: list[str] = []
    while len(picked) < rng.choice((1, 2, 3)):
        word = words(rng, 1)[0]
        if VOCAB.index(word) >= 30 and word not in picked:
            picked.append(word)
    return " ".join(picked)


def observation(rng: random.Random, i: int, project: str) -> dict[str, Any]:
    title = " ".join(words(rng, 6))
    return {
        "project": project,
        "session_id": f"bench-{i % 16}",
        "type": rng.choice(("command", "file_write", "research", "note")),
        "title": title,
        "body": " ".join(words(rng, 40)),
        "files": [f"src/{words(rng, 1)[0]}.py"],
        "event_id": f"bench-{project}-{i}",
    }


def run_clients(clients: int, work: Callable[[int], None]) -> float:
    """Run work(k) in `clients` threads started together; seconds until all finish."""
    barrier = threading.Barrier(clients + 1)

    def run(k: int) -> None:
        barrier.wait()
        work(k)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def singles(worker: WorkerProcess, total: int, clients: int) -> dict[str, Any]:
    """`clients` keep-alive connections each posting one observation per request."""
    per = total // clients
    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    payloads = [
        [observation(random.Random(k * per + i), k * per + i, "single") for i in range(per)]
        for k in range(clients)
    ]

    def work(k: int) -> None:
        conn = Conn(worker)
        mine: list[float] = []
        for item in payloads[k]:
            t0 = time.perf_counter()
            status, _ = conn.call("POST", "/api/observations", item)
            mine.append(time.perf_counter() - t0)
            if status != 201:
                errors.append(status)
        conn.close()
        with lock:
            latencies.extend(mine)

    elapsed = run_clients(clients, work)
    return {
        "requests": per * clients,
        "clients": clients,
        "seconds": round(elapsed, 3),
        "per_second": round(per * clients / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 2),
        "p95_ms": round(percentile(latencies, 95) * 1000, 2),
        "errors": len(errors),
    }


def batches(
    worker: WorkerProcess, total: int, size: int, clients: int, project: str, seed: int
) -> dict[str, Any]:
    """`clients` connections each posting {"observations": [size items]} per request."""
    per = max(1, total // size // clients)
    errors: list[int] = []
    rng = random.Random(seed)
    payloads = [
        [
            {
                "observations": [
                    observation(rng, ((k * per + b) * size) + j, project) for j in range(size)
                ]
            }
            for b in range(per)
        ]
        for k in range(clients)
    ]

    def work(k: int) -> None:
        conn = Conn(worker)
        for body in payloads[k]:
            status, _ = conn.call("POST", "/api/observations", body)
            if status not in (200, 201):
                errors.append(status)
        conn.close()

    elapsed = run_clients(clients, work)
    count = per * clients * size
    return {
        "observations": count,
        "batch_size": size,
        "clients": clients,
        "seconds": round(elapsed, 3),
        "per_second": round(count / elapsed, 1),
        "errors": len(errors),
    }


def search_latency(worker: WorkerProcess, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    conn = Conn(worker)
    status, body = conn.call("GET", "/api/search?q=parser&mode=keyword&limit=10")
    if status == 404 and b"no route" in body:
        conn.close()
        return {"available": False, "note": "GET /api/search is not in this build"}
    samples: list[float] = []
    hits: list[int] = []
    for _ in range(queries):
        q = query(rng)
        path = "/api/search?" + urllib.parse.urlencode({"q": q, "mode": "keyword", "limit": 10})
        t0 = time.perf_counter()
        status, raw = conn.call("GET", path)
        samples.append(time.perf_counter() - t0)
        if status == 200:
            hits.append(len(json.loads(raw).get("hits", [])))
    conn.close()
    return {
        "available": True,
        "queries": queries,
        "p50_ms": round(percentile(samples, 50) * 1000, 2),
        "p95_ms": round(percentile(samples, 95) * 1000, 2),
        "mean_hits": round(statistics.mean(hits), 1) if hits else 0,
        "errors": queries - len(hits),
    }


def fill(worker: WorkerProcess, target: int, have: int, seed: int) -> int:
    if target > have:
        batches(worker, target - have, 500, 2, f"fill-{target}", seed)
    return target


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller counts (a smoke run)")
    parser.add_argument("--no-write", action="store_true", help="do not write results JSON")
    args = parser.parse_args(argv)
    args.quick = args.quick or os.environ.get("CAIRN_BENCH_QUICK") == "1"
    n_single = 1000 if args.quick else 4000
    n_batch = 5000 if args.quick else 40000
    sizes = (2000, 10000) if args.quick else (10_000, 100_000)
    queries = 100 if args.quick else 300

    with tempfile.TemporaryDirectory(prefix="cairn-bench-") as tmp:
        worker = WorkerProcess(home=Path(tmp) / "home", env_extra=BENCH_ENV).start()
        try:
            single = singles(worker, n_single, 4)
            batch = batches(worker, n_batch, 100, 4, "batch", 1)
            have = n_single + n_batch
            search: dict[str, Any] = {}
            for size in sizes:
                have = fill(worker, size, have, size)
                wait_keyword_index(worker)
                fresh = search_latency(worker, queries, size)
                # A restarted worker searches with the statistics PRAGMA optimize left at
                # close, which can change SQLite's plans: measure that state too.
                worker.stop()
                worker = WorkerProcess(home=worker.home, env_extra=BENCH_ENV).start()
                index_load = wait_keyword_index(worker)
                restarted = search_latency(worker, queries, size)
                search[str(size)] = {
                    "observations": have,
                    **restarted,
                    "fresh_worker": fresh,
                    "keyword_index_load_seconds": index_load,
                    "note": "p50/p95 after a restart (the worse of the two states in practice)",
                }
        finally:
            worker.stop()

    rows = [
        (
            "single posts/s (4 clients)",
            single["per_second"],
            ">= 1000",
            single["per_second"] >= 1000,
        ),
        ("single post p50 ms", single["p50_ms"], "", None),
        (
            "batch obs/s (100/post, 4 clients)",
            batch["per_second"],
            ">= 10000",
            batch["per_second"] >= 10000,
        ),
    ]
    for size, res in search.items():
        if res.get("available"):
            fresh = res["fresh_worker"]
            worse = max(res["p95_ms"], fresh["p95_ms"])
            rows.append(
                (f"keyword search p50 ms @{size} (fresh worker)", fresh["p50_ms"], "", None)
            )
            rows.append(
                (f"keyword search p95 ms @{size} (fresh worker)", fresh["p95_ms"], "", None)
            )
            rows.append((f"keyword search p50 ms @{size} (restarted)", res["p50_ms"], "", None))
            rows.append((f"keyword search p95 ms @{size} (restarted)", res["p95_ms"], "", None))
            rows.append(
                (
                    f"keyword search p95 ms @{size} (worse of the two)",
                    worse,
                    "< 20" if size == "100000" else "",
                    worse < 20 if size == "100000" else None,
                )
            )
        else:
            rows.append((f"keyword search @{size}", "n/a", res["note"], None))
    data = {"quick": args.quick, "single_posts": single, "batches": batch, "keyword_search": search}
    return report(
        "api", "API (real worker over HTTP, embeddings off)", rows, data, write=not args.no_write
    )


if __name__ == "__main__":
    main()
