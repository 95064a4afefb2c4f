"""Ceilings: how far the three unmet speed aims can go on this machine, with the parts around
each one taken away.

`bench/api.py` and `bench/search.py` measure the product end to end. This measures the same work
with less and less around it, so a figure that misses its aim can be split into what the
machine allows and what the code adds:

- single posts (aim 1,000/s over HTTP from 4 clients): the whole app, in this process, from 4
  concurrent tasks but with no socket, HTTP parser or client; then only the store's writer,
  fed single items from 4 threads (group commit as in the worker);
- batches (aim 10,000 observations/s over HTTP): the store's writer alone, 100-row calls;
- background embedding (aim 300 items/s): the default model on bench/search.py's texts, one
  text per run on every core as the worker runs it; then, from ONNX Runtime's profile, the time
  its matrix products alone take: the rate if every other operation cost nothing.

Run: `.venv/bin/python bench/ceilings.py` (`--quick` for a smaller run). Writes
bench/results/ceilings.json. Uses a temporary CAIRN_HOME; the embedding part builds the int8
model there once (~10 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import BENCH_ENV, observation  # noqa: E402
from bench.common import report  # noqa: E402
from bench.search import synthetic_observation  # noqa: E402


async def _app_singles(home: Path, total: int, clients: int) -> dict[str, Any]:
    from worker.app import create_app
    from worker.inprocess import call_app
    from worker.settings import load_settings

    settings = load_settings()
    app = create_app(settings)
    items = [observation(random.Random(i), i, "ceiling") for i in range(total + 200)]
    async with app.router.lifespan_context(app) as state:  # type: ignore[attr-defined]
        token = settings.token_path.read_text().strip()

        async def post(item: dict[str, Any]) -> None:
            status, body = await call_app(
                app,
                "POST",
                "/api/observations",
                body=item,
                token=token,
                host=f"127.0.0.1:{settings.server.port}",
                state=dict(state),
                client=("127.0.0.1", 50000),
                server=("127.0.0.1", settings.server.port),
            )
            if status != 201:
                raise SystemExit(f"post answered {status}: {body[:200]!r}")

        for item in items[:200]:  # warm-up: imports, statement cache, first pages
            await post(item)
        rest = items[200:]

        async def client(k: int) -> None:
            for item in rest[k::clients]:
                await post(item)

        cpu, started = time.thread_time(), time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(clients)))
        seconds = time.perf_counter() - started
        loop_cpu = time.thread_time() - cpu
    return {
        "per_second": round(total / seconds, 1),
        "event_loop_cpu_us_per_post": round(loop_cpu / total * 1e6),
    }


def _store_writes(db: Path, total: int, clients: int, size: int) -> dict[str, Any]:
    """`clients` tasks of one event loop (as in the worker) each handing the writer `size`-item
    insert_many calls and waiting for each."""
    from worker.api.observations import _prepare
    from worker.store import Store
    from worker.store import observations as q

    store = Store(db)
    store.open()
    try:
        calls = [
            [
                _prepare(observation(random.Random(n * size + i), n * size + i, f"w{size}"))
                for i in range(size)
            ]
            for n in range(total // size)
        ]
        store.write_sync(lambda c: q.insert_many(c, calls[0]))

        async def feed() -> float:
            async def client(k: int) -> None:
                for items in calls[1 + k :: clients]:
                    await store.write_items(q.insert_many, items)

            started = time.perf_counter()
            await asyncio.gather(*(client(k) for k in range(clients)))
            return time.perf_counter() - started

        seconds = asyncio.run(feed())
        written = (len(calls) - 1) * size
    finally:
        store.close()
    return {"per_second": round(written / seconds, 1)}


def _embedding(home: Path, texts_n: int) -> dict[str, Any]:
    import onnxruntime as ort  # type: ignore[import-untyped]

    from worker.retrieval.embedder import DEFAULT_MODEL, OnnxEmbedder, load_embedder
    from worker.retrieval.service import embedding_text

    embedder = load_embedder(DEFAULT_MODEL, "", home / "models", 64, quantize=True)
    if not isinstance(embedder, OnnxEmbedder):
        return {"note": "the default model did not load"}
    rng = random.Random(7)
    texts = [
        embedding_text({**synthetic_observation(rng, "/p", "s"), "kind": "observation"}, 2000)
        for _ in range(texts_n)
    ]
    embedder.embed(texts[:32])
    rates = []
    for _ in range(3):
        started = time.perf_counter()
        embedder.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
    lanes = max(1, embedder.lanes)
    # One lane, profiled: the share of a run spent in the matrix products.
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = str(home / "ort-profile")
    session = ort.InferenceSession(
        str(embedder.folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    encoded = embedder.token_ids(texts[:200])
    for ids in encoded:
        session.run(None, embedder.model_feed([ids]))
    events = json.loads(Path(session.end_profiling()).read_text())
    kernel = matmul = 0.0
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            kernel += event["dur"]
            if "MatMul" in event["args"].get("op_name", ""):
                matmul += event["dur"]
    runs = [e["dur"] for e in events if e.get("name") == "model_run"]
    per_run_ms = statistics.median(runs) / 1000
    matmul_ms = matmul / len(encoded) / 1000
    return {
        "texts_per_second": round(statistics.median(rates), 1),
        "lanes": lanes,
        "mean_word_pieces": round(statistics.mean(len(ids) for ids in encoded), 1),
        "run_ms_one_lane_profiled": round(per_run_ms, 2),
        "matmul_ms_one_lane_profiled": round(matmul_ms, 2),
        "matmul_share": round(matmul / kernel, 3) if kernel else None,
        "matmul_only_texts_per_second": round(lanes * 1000 / matmul_ms, 1),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (a smoke run)")
    parser.add_argument("--no-write", action="store_true", help="do not write results JSON")
    args = parser.parse_args(argv)
    quick = args.quick or os.environ.get("CAIRN_BENCH_QUICK") == "1"
    singles, batch_rows, texts = (500, 5_000, 100) if quick else (3_000, 30_000, 600)
    with tempfile.TemporaryDirectory(prefix="cairn-ceilings-") as tmp:
        home = Path(tmp) / "home"
        os.environ.update({**BENCH_ENV, "CAIRN_HOME": str(home)})
        os.environ.pop("CAIRN_PORT", None)
        app = asyncio.run(_app_singles(home, singles, 4))
        store_singles = _store_writes(Path(tmp) / "singles.db", singles, 4, 1)
        store_batches = _store_writes(Path(tmp) / "batches.db", batch_rows, 1, 100)
        store_batches_4 = _store_writes(Path(tmp) / "batches4.db", batch_rows, 4, 100)
        embedding = _embedding(home, texts)
    figures = [
        ("single posts/s: the app in-process, 4 tasks, no HTTP", app["per_second"]),
        ("  its event loop CPU us/post", app["event_loop_cpu_us_per_post"]),
        ("single posts/s: store writer alone, 4 tasks", store_singles["per_second"]),
        ("observations/s: store writer alone, 100-row calls", store_batches["per_second"]),
        ("  from 4 tasks", store_batches_4["per_second"]),
    ]
    if "texts_per_second" in embedding:
        figures += [
            ("embedding texts/s, in-process", embedding["texts_per_second"]),
            ("  word pieces per text (mean)", embedding["mean_word_pieces"]),
            ("  matrix products ms/text (one lane)", embedding["matmul_ms_one_lane_profiled"]),
            ("  share of kernel time", embedding["matmul_share"]),
            (
                "embedding texts/s if only matrix products cost",
                embedding["matmul_only_texts_per_second"],
            ),
        ]
    # No aims here: these bound the aims of bench/api.py and bench/search.py.
    rows = [(name, value, "", None) for name, value in figures]
    data = {
        "app_singles": app,
        "store_singles": store_singles,
        "store_batches": store_batches,
        "store_batches_4_tasks": store_batches_4,
        "embedding": embedding,
    }
    return report(
        "ceilings",
        "Ceilings (the same work with less around it)",
        rows,
        data,
        write=not args.no_write,
    )


if __name__ == "__main__":
    main()
