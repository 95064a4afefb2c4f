"""Memory lifecycle figures on a real SQLite file: decay pass, compression, write-time merge cost.

Figures (issue 5): a decay pass over 100k items (aim under 1 s), compression over 10k memories
(aim under 5 s), and the overhead per save of scoring, tagging, merging and the supersession check
compared with a plain insert.
Run: `.venv/bin/python bench/lifecycle.py` (`--quick` for a smaller run). Writes
bench/results/lifecycle.json.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import print_table, write_result  # noqa: E402
from worker.clock import now_ms  # noqa: E402
from worker.memory import compress  # noqa: E402
from worker.memory.decay import DAY_MS, DecayPolicy, run_pass  # noqa: E402
from worker.memory.merge import save  # noqa: E402
from worker.settings import Settings, load_settings  # noqa: E402
from worker.store import Store, projects  # noqa: E402
from worker.store import memories as memories_store  # noqa: E402
from worker.store.rows import normalised_hash  # noqa: E402
from worker.store.vectors import to_blob  # noqa: E402

TYPES = ["command", "research", "file_write", "web", "mcp", "note", "delegation", "other"]
KINDS = ["lesson", "decision", "fact", "preference", "note"]
SUBJECTS = [
    "database", "cache", "deploy", "parser", "router", "auth", "billing", "queue", "search",
    "logging", "metrics", "frontend", "worker", "scheduler", "migrations", "tests", "ci", "docs",
]  # fmt: skip
TOOLS = ["PostgreSQL", "Redis", "Docker", "pytest", "Vite", "ruff", "Kafka", "nginx", "Celery"]


# Word frequencies in real notes follow Zipf's law: a few words are everywhere, most are rare.
SYLLABLES = ["ka", "lo", "mi", "ne", "po", "ru", "si", "ta", "ve", "zo",
             "bar", "cen", "dol", "fir", "gum", "hex", "jot", "kin", "lum", "mox"]  # fmt: skip
VOCABULARY = [
    SYLLABLES[n % 20] + SYLLABLES[(n // 20) % 20] + SYLLABLES[(n // 400) % 20] for n in range(4000)
]
ZIPF = [1.0 / (rank + 1) for rank in range(len(VOCABULARY))]


def sentence(rng: random.Random, i: int) -> str:
    """A memory-like sentence: a template naming a subject and a tool, plus Zipf-distributed words."""
    subject = rng.choice(SUBJECTS)
    tool = rng.choice(TOOLS)
    detail = " ".join(rng.choices(VOCABULARY, weights=ZIPF, k=rng.randint(4, 12)))
    templates = [
        f"Use {tool} {rng.randint(1, 20)} for the {subject} layer: {detail}",
        f"The {subject} service must never call {tool} directly ({detail})",
        f"Lesson: {subject} tests were flaky because {tool} started slowly; {detail}",
        f"Always restart {tool} after changing the {subject} config, {detail}",
        f"Decision: the {subject} module keeps its state in {tool}, {detail}",
    ]
    return rng.choice(templates) + f" [{i}]"


def open_store(home: Path) -> Store:
    store = Store(home / "cairn.db")
    store.open()
    return store


def fill_decay(store: Store, n: int, rng: random.Random) -> None:
    """n/2 memories and n/2 observations with ages up to a year, spread over 20 projects."""
    now = now_ms()

    def write(conn: Any) -> None:
        pids = [projects.ensure(conn, f"/bench/p{i}") for i in range(20)]
        mem_rows = []
        for i in range(n // 2):
            created = now - int(rng.random() * 365 * DAY_MS)
            text = f"memory {i} about {rng.choice(SUBJECTS)}"
            mem_rows.append(
                (
                    rng.choice(pids),
                    rng.choice(KINDS),
                    text,
                    normalised_hash(text),
                    rng.randint(1, 5),
                    1 if rng.random() < 0.02 else 0,
                    created,
                    created,
                    rng.randint(0, 5),
                )
            )
        conn.executemany(
            "INSERT INTO memories(project_id, kind, content, content_hash, importance, pinned, "
            "created_at, updated_at, retrieval_count) VALUES (?,?,?,?,?,?,?,?,?)",
            mem_rows,
        )
        obs_rows = []
        for i in range(n - n // 2):
            created = now - int(rng.random() * 60 * DAY_MS)
            obs_rows.append(
                (
                    rng.choice(pids),
                    rng.choice(TYPES),
                    f"obs {i}",
                    f"h{i}",
                    rng.randint(1, 3),
                    created,
                )
            )
        conn.executemany(
            "INSERT INTO observations(project_id, type, title, content_hash, importance, "
            "created_at) VALUES (?,?,?,?,?,?)",
            obs_rows,
        )

    store.write_sync(write)


def unarchive(conn: Any) -> None:
    for table in ("memories", "observations"):
        conn.execute(f"UPDATE {table} SET archived_at = NULL, archive_reason = NULL")


def bench_decay(n: int, runs: int, rng: random.Random) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp))
        fill_decay(store, n, rng)
        # Without cap pressure a pass only looks for expired memories; measure that (dry), then
        # a pass where every project is over a cap of 2,000 (the costly path: the retention of
        # every observation of each project over its cap, on its activity clock).
        policy = DecayPolicy(observation_cap=10**9)
        dry = []
        for _ in range(runs):
            started = time.perf_counter()
            store.write_sync(lambda c: run_pass(c, policy, now_ms(), dry_run=True))
            dry.append(time.perf_counter() - started)
        passes = []
        real: dict[str, Any] = {}
        for _ in range(runs):
            store.write_sync(unarchive)
            started = time.perf_counter()
            real = store.write_sync(
                lambda c: run_pass(c, DecayPolicy(observation_cap=2000), now_ms())
            )
            passes.append(time.perf_counter() - started)
        real_seconds = statistics.median(passes)
        store.close()
    return {
        "items": n,
        "dry_run_median_s": statistics.median(dry),
        "dry_run_runs": runs,
        "pass_s": real_seconds,
        "archived_memories": real["memories"]["archived"],
        "archived_observations": real["observations"]["archived"],
        "evicted_by_cap": real["observations"]["evicted"],
    }


def fill_compress(
    store: Store, n: int, rng: random.Random, *, vectors: bool, dup_share: float = 0.05
) -> int:
    """n memories in one project; dup_share of them near-duplicates of another. Returns dups."""
    nprng = np.random.default_rng(7)
    base = nprng.standard_normal((n, 384)).astype(np.float32)
    texts = [sentence(rng, i) for i in range(n)]
    dups = int(n * dup_share)
    for k in range(dups):
        src = rng.randrange(n - dups)
        target = n - dups + k
        base[target] = base[src] + 0.15 * nprng.standard_normal(384).astype(np.float32)
        texts[target] = texts[src] + " (again)"
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    now = now_ms()

    def write(conn: Any) -> None:
        pid = projects.ensure(conn, "/bench/compress")
        for i, text in enumerate(texts):
            mid = memories_store.insert_row(
                conn,
                pid,
                {"kind": rng.choice(KINDS), "content": text, "importance": rng.randint(1, 5),
                 "created_at_ms": now - i},
            )  # fmt: skip
            if vectors:
                conn.execute(
                    "INSERT INTO embeddings(item_kind, item_id, project_id, model, dim, vector, "
                    "created_at) VALUES ('memory', ?, ?, 'bench-384', 384, ?, ?)",
                    (mid, pid, to_blob(base[i]), now),
                )

    store.write_sync(write)
    return dups


def bench_compress(n: int, runs: int, rng: random.Random, *, vectors: bool) -> dict[str, Any]:
    settings = load_settings({})
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp))
        dups = fill_compress(store, n, rng, vectors=vectors)
        times = []
        plan: dict[str, Any] = {}
        for _ in range(runs):
            started = time.perf_counter()
            plan = store.write_sync(lambda c: compress.run(c, settings, dry_run=True))
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        done = store.write_sync(lambda c: compress.run(c, settings, dry_run=False))
        applied = time.perf_counter() - started
        store.close()
    return {
        "memories": n,
        "planted_near_duplicates": dups,
        "method": plan.get("method"),
        "dry_run_median_s": statistics.median(times),
        "apply_s": applied,
        "merged": done["merged"],
        "superseded": done["superseded"],
    }


def bench_saves(existing: int, saves: int, rng: random.Random) -> dict[str, Any]:
    """Per-save cost: plain insert vs merge.save (new text) vs merge.save (a repeat)."""
    settings: Settings = load_settings({})
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp))
        texts = [sentence(rng, i) for i in range(existing + 2 * saves)]

        def seed(conn: Any) -> None:
            pid = projects.ensure(conn, "/bench/saves")
            for text in texts[:existing]:
                memories_store.insert_row(conn, pid, {"kind": "fact", "content": text})

        store.write_sync(seed)
        plain: list[float] = []
        fresh: list[float] = []
        repeat: list[float] = []
        for i in range(saves):
            a = texts[existing + i]
            b = texts[existing + saves + i]

            def raw(conn: Any, text: str = a) -> None:
                pid = projects.ensure(conn, "/bench/saves")
                memories_store.insert_row(conn, pid, {"kind": "decision", "content": text})

            item = {"kind": "decision", "content": b, "project": "/bench/saves"}
            for bucket, fn in (
                (plain, raw),
                (fresh, lambda c, it=item: save(c, it, settings)),
                (repeat, lambda c, it=item: save(c, it, settings)),
            ):
                started = time.perf_counter()
                store.write_sync(fn)
                bucket.append(time.perf_counter() - started)
        store.close()
    ms = 1000.0
    return {
        "existing_memories": existing,
        "saves": saves,
        "plain_insert_median_ms": statistics.median(plain) * ms,
        "save_new_median_ms": statistics.median(fresh) * ms,
        "save_repeat_median_ms": statistics.median(repeat) * ms,
        "overhead_new_median_ms": (statistics.median(fresh) - statistics.median(plain)) * ms,
        "ratio_new_to_plain": statistics.median(fresh) / statistics.median(plain),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = parser.parse_args()
    rng = random.Random(42)
    load_before = os.getloadavg()
    decay_n, compress_n, runs = (10_000, 2_000, 1) if args.quick else (100_000, 10_000, 3)
    decay = bench_decay(decay_n, runs, rng)
    vec = bench_compress(compress_n, runs, rng, vectors=True)
    lex = bench_compress(compress_n, runs, rng, vectors=False)
    saves = bench_saves(existing=compress_n, saves=300 if args.quick else 1000, rng=rng)
    figures = [
        {
            "figure": f"decay pass over {decay_n:,} items, median of {runs} (s)",
            "value": round(decay["dry_run_median_s"], 3),
            "aim": "< 1 s",
            "met": decay["dry_run_median_s"] < 1.0,
        },
        {
            "figure": f"decay pass over {decay_n:,} items, archiving + caps, median (s)",
            "value": round(decay["pass_s"], 3),
            "aim": "< 1 s",
            "met": decay["pass_s"] < 1.0,
        },
        {
            "figure": f"compression over {compress_n:,} memories, embeddings, median (s)",
            "value": round(vec["dry_run_median_s"], 3),
            "aim": "< 5 s",
            "met": vec["dry_run_median_s"] < 5.0,
        },
        {
            "figure": f"compression over {compress_n:,} memories, lexical fallback, median (s)",
            "value": round(lex["dry_run_median_s"], 3),
            "aim": "< 5 s",
            "met": lex["dry_run_median_s"] < 5.0,
        },
        {
            "figure": "save: plain insert, median (ms)",
            "value": round(saves["plain_insert_median_ms"], 3),
            "aim": "",
            "met": None,
        },
        {
            "figure": "save: score + tags + merge + supersession check, median (ms)",
            "value": round(saves["save_new_median_ms"], 3),
            "aim": "",
            "met": None,
        },
        {
            "figure": "save: repeat merged into the existing memory, median (ms)",
            "value": round(saves["save_repeat_median_ms"], 3),
            "aim": "",
            "met": None,
        },
        {
            "figure": "write-time merge overhead per save (new / plain)",
            "value": f"{saves['ratio_new_to_plain']:.2f}x",
            "aim": "",
            "met": None,
        },
    ]
    print_table(
        "Memory lifecycle",
        [(f["figure"], f["value"], f["aim"], f["met"]) for f in figures],
    )
    print(
        f"decay: archived {decay['archived_memories']:,} memories, "
        f"{decay['archived_observations']:,} observations ({decay['evicted_by_cap']:,} by cap); "
        f"compress: {vec['merged']} merged / {vec['superseded']} superseded of "
        f"{vec['planted_near_duplicates']} planted (embeddings), {lex['merged']} merged "
        "(lexical)"
    )
    load_after = os.getloadavg()
    print(
        f"load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after, on "
        f"{os.cpu_count()} CPUs: figures taken on a busy machine are slower"
    )
    write_result(
        "lifecycle",
        {
            "quick": args.quick,
            "cpus": os.cpu_count(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
            "figures": figures,
            "decay": decay,
            "compress_embeddings": vec,
            "compress_lexical": lex,
            "saves": saves,
        },
    )


if __name__ == "__main__":
    main()
