"""Search speed on a synthetic coding corpus (10k and 100k observations), against a real worker.

For each size: build the database through the store (the same insert path as the API), embed
it, start a real worker on it (`python -m worker start --foreground`) with the real offline
model, then measure over HTTP: hybrid search p50/p95 (the query embedding included), prompt
context build p95, session-start context p95, and the worker's RSS with the model and all
vectors loaded. Background embedding throughput is measured by the worker's own embedder on
the first `--embed-sample` items, from the moment its model has loaded (a fresh models folder
first derives the int8 model once: `model_load_seconds` in the JSON) until all are embedded.

On a shared or slow machine, embedding all 100k items takes long: by default the 100k corpus
reuses real vectors of the embedded sample (with a little noise, re-normalised) for the rest.
Brute-force cosine costs the same whatever the vectors hold; pass --embed-all to embed all.

    python bench/search.py [--sizes 10000,100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import percentile, print_table, wait_keyword_index, write_result
from tests.e2e.worker_process import WorkerProcess
from worker.settings import load_settings
from worker.store import Store
from worker.store import observations as obs_q
from worker.store import vectors as vector_q
from worker.store.vectors import to_blob

MODULES = [
    "auth",
    "billing",
    "checkout",
    "search",
    "cache",
    "queue",
    "scheduler",
    "mailer",
    "export",
    "importer",
    "reports",
    "users",
    "orders",
    "inventory",
    "payments",
    "webhooks",
    "sessions",
    "settings",
    "metrics",
    "logging",
    "storage",
    "api",
    "cli",
    "parser",
    "renderer",
    "migrations",
    "notifications",
    "permissions",
    "uploads",
]
VERBS = [
    "add",
    "fix",
    "refactor",
    "rename",
    "remove",
    "optimise",
    "document",
    "test",
    "retry",
    "validate",
    "cache",
    "log",
]
NOUNS = [
    "timeout",
    "race",
    "condition",
    "null",
    "pointer",
    "off-by-one",
    "memory",
    "leak",
    "deadlock",
    "encoding",
    "bug",
    "pagination",
    "cursor",
    "rate",
    "limit",
    "retry",
    "backoff",
    "connection",
    "pool",
    "index",
    "query",
    "plan",
    "cache",
    "key",
    "serializer",
    "schema",
    "migration",
    "config",
    "flag",
    "token",
    "refresh",
    "session",
    "cookie",
    "header",
    "parser",
]
IDENT = [
    "getUserById",
    "parseConfig",
    "retry_with_backoff",
    "OrderService",
    "load_settings",
    "handleWebhook",
    "RefundCalculator",
    "build_index",
    "flushQueue",
    "SessionStore",
    "render_template",
    "validate_input",
    "TokenRefresher",
    "compute_total",
    "PaymentGateway",
    "fetch_page",
]
TOOLS = ("Edit", "Write", "Read", "Grep", "Bash", "WebFetch")


def synthetic_observation(rng: random.Random, project: str, session: str) -> dict[str, Any]:
    module = rng.choice(MODULES)
    path = f"src/{module}/{rng.choice(MODULES)}_{rng.randint(1, 40)}.py"
    ident = rng.choice(IDENT)
    noun = " ".join(rng.sample(NOUNS, 2))
    verb = rng.choice(VERBS)
    tool = rng.choice(TOOLS)
    if tool in ("Edit", "Write"):
        kind, title = "file_write", f"{tool} {path}"
        body = f"{verb} {noun} in {ident}; {rng.choice(VERBS)} {rng.choice(NOUNS)} handling"
        files = [path]
    elif tool == "Bash":
        kind, title = "command", f"pytest tests/{module}/test_{rng.choice(MODULES)}.py -x"
        body = f"exit {rng.choice((0, 0, 0, 1))}: {rng.randint(1, 90)} passed; {noun} in {ident}"
        files = []
    elif tool == "WebFetch":
        kind, title = "web", f"WebFetch docs for {module} {noun}"
        body = f"https://docs.example.com/{module}/{rng.choice(NOUNS)} explains {verb} {noun}"
        files = []
    else:
        kind, title = "research", f"{tool} {ident} in src/{module}"
        body = f"found {rng.randint(1, 30)} matches of {ident} around {noun}"
        files = [path]
    return {
        "project": project,
        "session_id": session,
        "type": kind,
        "title": title,
        "body": body,
        "files": files,
        "tool_name": tool,
    }


def build_corpus(store: Store, size: int, seed: int) -> None:
    rng = random.Random(seed)
    batch: list[dict[str, Any]] = []
    projects = [f"/home/dev/{name}" for name in ("shop", "api", "site", "tools")]
    for i in range(size):
        # 70% of the items in the main project, the rest spread over three others.
        project = projects[0] if rng.random() < 0.7 else rng.choice(projects[1:])
        batch.append(synthetic_observation(rng, project, f"{project}-s{i // 40}"))
        if len(batch) == 1000:
            items = list(batch)
            store.write_sync(lambda c, items=items: obs_q.insert_many(c, items))  # type: ignore[misc]
            batch.clear()
    if batch:
        store.write_sync(lambda c: obs_q.insert_many(c, batch))


def _wait_embeddings(
    worker: WorkerProcess, timeout: float, done: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """Poll /api/embeddings/stats until `done(stats)`; exits if the model is unavailable."""
    deadline = time.monotonic() + timeout
    stats: dict[str, Any] = {}
    while time.monotonic() < deadline:
        _, stats = worker.request("GET", "/api/embeddings/stats", timeout=30)
        if stats.get("status") == "unavailable":
            raise SystemExit(f"the model is unavailable: {stats.get('error')}")
        if done(stats):
            return stats
        time.sleep(0.05)
    raise SystemExit(f"{what} did not finish in {timeout}s: {stats}")


def wait_model(worker: WorkerProcess, timeout: float) -> float:
    """Seconds until the worker's embedder has loaded (on a fresh models folder that includes
    deriving the int8 model once): the throughput clock starts after it."""
    started = time.monotonic()
    _wait_embeddings(
        worker, timeout, lambda s: s.get("status") not in ("starting", "loading"), "loading"
    )
    return time.monotonic() - started


def wait_embedded(worker: WorkerProcess, timeout: float) -> dict[str, Any]:
    return _wait_embeddings(
        worker,
        timeout,
        lambda s: s.get("status") == "ready" and s.get("coverage") == 1.0,
        "embedding",
    )


def copy_vectors(store: Store, model: str, dim: int, sample: int, seed: int) -> None:
    """Give every item past the embedded sample a noisy copy of a real sample vector."""
    rng = np.random.default_rng(seed)

    def read(conn: Any) -> list[tuple[int | None, bytes]]:
        return [(p, blob) for _ref, p, blob in vector_q.iter_vectors(conn, model)]

    real = store.read_sync(read)
    pool = np.stack([np.frombuffer(b, dtype="<f4") for _, b in real])
    missing = store.read_sync(lambda c: vector_q.missing(c, model, 10**9))
    projects = dict(
        store.read_sync(lambda c: c.execute("SELECT id, project_id FROM observations").fetchall())
    )
    for start in range(0, len(missing), 5000):
        chunk = missing[start : start + 5000]
        base = pool[rng.integers(0, len(pool), len(chunk))]
        noisy = base + rng.normal(0, 0.02, base.shape).astype(np.float32)
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        rows = [
            (ref, projects.get(ref[1]), to_blob(noisy[i].astype(np.float32)))
            for i, ref in enumerate(chunk)
        ]
        store.write_sync(lambda c, rows=rows: vector_q.save(c, model, dim, rows))  # type: ignore[misc]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def timed(worker: WorkerProcess, path: str, params: dict[str, Any]) -> float:
    started = time.perf_counter()
    status, body = worker.request("GET", f"{path}?{urllib.parse.urlencode(params)}", timeout=30)
    elapsed = (time.perf_counter() - started) * 1000
    if status != 200:
        raise SystemExit(f"{path} answered {status}: {body}")
    return elapsed


def queries(rng: random.Random, n: int) -> list[str]:
    shapes = [
        lambda: f"why does {rng.choice(IDENT)} hit a {rng.choice(NOUNS)}",
        lambda: f"{rng.choice(VERBS)} the {rng.choice(MODULES)} {rng.choice(NOUNS)}",
        lambda: f"where did we change src/{rng.choice(MODULES)}",
        lambda: f"tests failing in {rng.choice(MODULES)} after the {rng.choice(NOUNS)} fix",
    ]
    return [rng.choice(shapes)() for _ in range(n)]


def run_size(size: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    home = root / f"home-{size}"
    settings = load_settings(home=home, embed_enabled=True)
    home.mkdir(parents=True)
    store = Store(settings.db_path)
    store.open()
    started = time.perf_counter()
    build_corpus(store, size, args.seed)
    build_s = time.perf_counter() - started
    store.close()
    print(f"{size:,}: corpus built in {build_s:.1f}s", flush=True)

    result: dict[str, Any] = {"items": size, "build_seconds": round(build_s, 1)}
    sample = size if args.embed_all else min(size, args.embed_sample)
    if sample < size:
        # Embed only the sample in the worker: hide the rest, then restore it.
        store = Store(settings.db_path)
        store.open()
        store.write_sync(
            lambda c: c.execute(
                "CREATE TABLE bench_hidden AS SELECT * FROM observations WHERE id > ?", (sample,)
            )
        )
        store.write_sync(lambda c: c.execute("DELETE FROM observations WHERE id > ?", (sample,)))
        store.close()
    env = {"CAIRN_EMBED_ENABLED": "1"}
    worker = WorkerProcess(home=home, env_extra=env).start(timeout=120)
    try:
        result["model_load_seconds"] = round(wait_model(worker, args.embed_timeout), 1)
        t0 = time.perf_counter()
        stats = wait_embedded(worker, args.embed_timeout)
        seconds = time.perf_counter() - t0
        result["embedded_by_worker"] = sample
        result["embed_items_per_second"] = round(sample / seconds, 1)
        result["embed_items_per_second_busy"] = stats.get("items_per_second")
        model, dim = str(stats["model"]), int(stats["dimensions"])
    finally:
        worker.stop()
    if sample < size:
        store = Store(settings.db_path)
        store.open()
        store.write_sync(lambda c: c.execute("INSERT INTO observations SELECT * FROM bench_hidden"))
        store.write_sync(lambda c: c.execute("DROP TABLE bench_hidden"))
        copy_vectors(store, model, dim, sample, args.seed)
        store.close()
        result["vectors"] = f"{sample} embedded by the model, the rest noisy copies of those"

    worker = WorkerProcess(home=home, env_extra=env).start(timeout=120)
    try:
        t0 = time.perf_counter()
        wait_embedded(worker, 600)
        result["vectors_load_seconds"] = round(time.perf_counter() - t0, 1)
        result["keyword_index_load_seconds"] = wait_keyword_index(worker)
        rng = random.Random(args.seed + size)
        project = "/home/dev/shop"
        for q in queries(rng, 10):  # warm-up
            timed(worker, "/api/search", {"q": q, "project": project})
        search_ms = [
            timed(worker, "/api/search", {"q": q, "project": project})
            for q in queries(rng, args.queries)
        ]
        keyword_ms = [
            timed(worker, "/api/search", {"q": q, "project": project, "mode": "keyword"})
            for q in queries(rng, args.queries)
        ]
        prompt_ms = [
            timed(worker, "/api/context", {"project": project, "query": q})
            for q in queries(rng, args.queries)
        ]
        start_ms = [timed(worker, "/api/context", {"project": project}) for _ in range(50)]
        assert worker.proc is not None
        result.update(
            hybrid_p50_ms=round(statistics.median(search_ms), 1),
            hybrid_p95_ms=round(percentile(search_ms, 95), 1),
            keyword_p50_ms=round(statistics.median(keyword_ms), 1),
            keyword_p95_ms=round(percentile(keyword_ms, 95), 1),
            prompt_context_p50_ms=round(statistics.median(prompt_ms), 1),
            prompt_context_p95_ms=round(percentile(prompt_ms, 95), 1),
            session_start_context_p95_ms=round(percentile(start_ms, 95), 1),
            worker_rss_mb=round(rss_mb(worker.proc.pid), 1),
        )
    finally:
        worker.stop()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embed-sample", type=int, default=5_000)
    parser.add_argument("--embed-all", action="store_true")
    parser.add_argument("--embed-timeout", type=float, default=3600)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if os.environ.get("CAIRN_BENCH_QUICK") == "1":
        args.sizes, args.queries, args.embed_sample = "10000", 50, 1000
    root = Path(tempfile.mkdtemp(prefix="cairn-bench-search-"))
    results: dict[str, Any] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()[0]}
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            results[str(size)] = run_size(size, args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows: list[tuple[str, Any, str, bool | None]] = []
    for size, r in results.items():
        if not isinstance(r, dict):
            continue
        big = int(size) >= 100_000
        label = f"{int(size) // 1000}k"
        rows += [
            (f"{label} hybrid search p50 ms", r["hybrid_p50_ms"], "", None),
            (
                f"{label} hybrid search p95 ms",
                r["hybrid_p95_ms"],
                "< 50" if big else "",
                r["hybrid_p95_ms"] < 50 if big else None,
            ),
            (f"{label} keyword search p95 ms", r["keyword_p95_ms"], "", None),
            (
                f"{label} prompt context p95 ms",
                r["prompt_context_p95_ms"],
                "< 100" if big else "",
                r["prompt_context_p95_ms"] < 100 if big else None,
            ),
            (f"{label} session-start context p95 ms", r["session_start_context_p95_ms"], "", None),
            (
                f"{label} embedding items/s (background)",
                r["embed_items_per_second"],
                ">= 300",
                r["embed_items_per_second"] >= 300,
            ),
            (
                f"{label} worker RSS MB (model + vectors)",
                r["worker_rss_mb"],
                "< 400" if big else "",
                r["worker_rss_mb"] < 400 if big else None,
            ),
        ]
    print_table(
        f"Search on a synthetic coding corpus ({results['cpus']} CPUs, load {results['load_average']:.1f})",
        rows,
    )
    results["figures"] = [
        {"figure": name, "value": value, "aim": aim, "met": met} for name, value, aim, met in rows
    ]
    write_result("search", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
