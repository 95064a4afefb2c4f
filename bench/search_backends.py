"""Hybrid search on SQLite and on PostgreSQL, same machine, same corpus, same calls (in process).

Per backend: write N observations (batches, the hook path through the store) and N/10 memories,
store a vector for each (random unit vectors of 384 dims under the fake embedder's model id: the
real model would take hours to embed 1M texts on 2 CPUs; brute-force cosine costs the same
whatever the vectors hold, and random vectors are a hard case for HNSW), then time what a worker
does at start, loading the in-memory keyword index (none on PostgreSQL: the database searches
the keywords, migration 6; `--keywords memory` builds it there too) and the vectors (none on
PostgreSQL with pgvector: the database searches them), the worker memory that took, and per
query: hybrid, keyword and semantic search p50/p95, the vector half and the keyword half alone (`worker.retrieval.search.search`, the query embedded by the fake
embedder), and the time for an item written by a second store (another worker) to be found by
the first's next search. On pgvector the vectors are COPYed in and the HNSW index built once
(its build time and rate printed), and the searches are checked to have used it.
PostgreSQL is a throwaway local server (tests/pg.py) over loopback TCP, fsync off, with a team
server's buffers (SERVER_OPTIONS).

    python bench/search_backends.py [--items 20000] [--queries 200] [--backends sqlite,postgres]
    python bench/search_backends.py --items 100000
    python bench/search_backends.py --items 1000000          # aim: PG hybrid p95 < 100 ms
    python bench/search_backends.py --items 1000000 --backends postgres --keep  # then, again:
    python bench/search_backends.py --items 1000000 --backends postgres --url URL  # no build
    python bench/search_backends.py --items 300000 --extrapolate-to 1000000  # build times
                                                             # projected, marked as such
"""

from __future__ import annotations

import argparse
import math
import os
import random
import struct
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
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Row, percentile, report
from tests import pg
from worker.retrieval.db_keywords import DatabaseKeywords, KeywordScorer
from worker.retrieval.embedder import FakeEmbedder
from worker.retrieval.keyword_index import KeywordIndex
from worker.retrieval.search import SearchRequest, _keyword_pass, search
from worker.retrieval.service import EmbeddingService
from worker.settings import load_settings
from worker.store import Store, memories, observations, projects
from worker.store import vectors as vector_q
from worker.store.pg import PgStore
from worker.store.pg import vectors as pg_vectors

DIM = 384
# A team server's memory settings rather than the tests' (32 MB of shared buffers): at 1M items
# the HNSW index is ~2 GB, and a search reading it through 32 MB of buffers measures the
# buffer manager, not the index.
SERVER_OPTIONS = ("shared_buffers=2GB", "effective_cache_size=8GB", "max_wal_size=8GB")
MODEL = f"fake-hash-{DIM}"  # the fake embedder's: the service loads these as its own
# One line of words reads better than one word a line.
WORDS = (  # noqa: SIM905
    "deploy nginx reload cache invalidation retry backoff parser token refresh session cookie "
    "migration schema index query plan timeout race deadlock pool connection webhook billing "
    "invoice refund getUserById parse_config OrderService funzione upload queue worker"
).split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _rss_mb() -> float:
    """This process's resident memory (MB): what a worker holds."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def build(store: Store | PgStore, n: int) -> dict[str, float]:
    """Write the corpus; the seconds its items and its vectors took (and on pgvector the
    HNSW index build alone)."""
    rng = random.Random(7)
    out: dict[str, float] = {}
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
    out["items write s"] = time.perf_counter() - started
    started = time.perf_counter()
    pid = store.read_sync(lambda c: projects.find(c, "/repo"))
    refs = [("observation", i + 1) for i in range(n)] + [("memory", i + 1) for i in range(n // 10)]
    generator = np.random.default_rng(1)
    if isinstance(store, PgStore) and store.native_vectors:
        out.update(bulk_vectors(store, refs, pid, generator))
    else:
        for start in range(0, len(refs), 1000):
            chunk = _unit(generator, len(refs[start : start + 1000]))
            rows = [
                (ref, pid, vector_q.to_blob(chunk[i]))
                for i, ref in enumerate(refs[start : start + 1000])
            ]
            store.write_sync(lambda c, r=rows: vector_q.save(c, MODEL, DIM, r))
    out["vectors write s"] = time.perf_counter() - started
    if isinstance(store, PgStore):
        # The planner's statistics, as autovacuum keeps them on a team server: the keyword
        # half's plans (GIN lookup, or the newest rows first for a common word) depend on them.
        started = time.perf_counter()
        store.write_sync(lambda db: db.execute("ANALYZE"))
        out["ANALYZE s"] = time.perf_counter() - started
    return {k: round(v, 1) for k, v in out.items()}


def _unit(generator: np.random.Generator, rows: int) -> Any:
    vectors = generator.standard_normal((rows, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def bulk_vectors(
    store: PgStore, refs: list[tuple[str, int]], pid: int, generator: np.random.Generator
) -> dict[str, float]:
    """On pgvector: the vectors COPYed in (binary) with no HNSW index yet, then the index built
    once (CREATE INDEX): inserting 1M rows one by one into an existing HNSW index would take
    hours. The rows are what `vector_q.save` writes (a plain copy for memories, a context copy
    for every item: here the same vector, as for an item with no thread predecessor)."""
    columns = "item_kind, item_id, project_id, model, dim, vector, created_at, embedding, "
    columns += "context_embedding"
    header = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
    vector_head = struct.pack(">hh", DIM, 0)
    model = MODEL.encode()
    started = time.perf_counter()

    def copy(db: Any) -> None:
        db.execute(f"DROP INDEX IF EXISTS embeddings_hnsw_{DIM}")
        db.execute(f"DROP INDEX IF EXISTS embeddings_context_hnsw_{DIM}")
        with (
            db.conn.cursor() as cursor,
            cursor.copy(f"COPY embeddings ({columns}) FROM STDIN (FORMAT BINARY)") as out,
        ):
            out.write(header)
            for start in range(0, len(refs), 5000):
                chunk = _unit(generator, len(refs[start : start + 5000]))
                little, big = chunk.astype("<f4"), chunk.astype(">f4")
                parts = []
                for i, (kind, item_id) in enumerate(refs[start : start + 5000]):
                    blob, as_vector = little[i].tobytes(), vector_head + big[i].tobytes()
                    parts += [
                        struct.pack(">hi", 9, len(kind)),
                        kind.encode(),
                        struct.pack(">iqiqi", 8, item_id, 8, pid, len(model)),
                        model,
                        struct.pack(">iqi", 8, DIM, len(blob)),
                        blob,
                        struct.pack(">iq", 8, 0),
                    ]
                    if kind == "memory":
                        parts += [struct.pack(">i", len(as_vector)), as_vector]
                    else:
                        parts.append(struct.pack(">i", -1))
                    parts += [struct.pack(">i", len(as_vector)), as_vector]
                out.write(b"".join(parts))
            out.write(struct.pack(">h", -1))

    store.write_sync(copy)
    out = {"vectors copy s": time.perf_counter() - started}
    started = time.perf_counter()

    def index(db: Any) -> None:
        # A team server's settings for a large build (the tests' server keeps small defaults).
        db.execute("SET LOCAL maintenance_work_mem = '4GB'")
        db.execute("SET LOCAL max_parallel_maintenance_workers = 1")
        pg_vectors.ensure_index(db, DIM)

    store.write_sync(index)
    out["HNSW build s"] = time.perf_counter() - started
    out["HNSW build rows/s"] = len(refs) / max(out["HNSW build s"], 1e-9)
    store.write_sync(lambda db: db.execute("ANALYZE embeddings"))
    return out


def measure(
    store: Store | PgStore,
    other: Store | PgStore,
    n: int,
    queries: int,
    keyword_source: str = "database",
    built: bool = False,
) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="cairn-bench-backends-"))
    settings = load_settings(home=home, embed_enabled=True)
    # `built`: the database already holds this corpus (an earlier run's, kept: --url).
    out: dict[str, Any] = {"corpus": "reused (--url)"} if built else build(store, n)
    # As the app: the worker's in-memory index on SQLite; on PostgreSQL the database's own
    # (migration 6: nothing to load; `--keywords memory` measures the in-memory one there).
    keywords: KeywordScorer
    if isinstance(store, PgStore) and keyword_source == "database":
        keywords = DatabaseKeywords()
        out["keywords searched by"] = "database (GIN)"
    else:
        keywords = KeywordIndex()
        started = time.perf_counter()
        store.read_sync(keywords.load)
        out["keyword index load s"] = round(time.perf_counter() - started, 2)
        out["keywords searched by"] = "worker (in-memory BM25)"
    service = EmbeddingService(settings, store, factory=lambda: FakeEmbedder(DIM))
    before = _rss_mb()
    started = time.perf_counter()
    service.start()
    assert service.wait_idle(3600), service.status()
    out["vectors load s"] = round(time.perf_counter() - started, 2)
    out["worker memory for vectors MB"] = round(_rss_mb() - before)
    out["vectors searched by"] = "database (HNSW)" if service.in_database else "worker (numpy)"
    rng = random.Random(3)

    def run(query: str, mode: str) -> list[Any]:
        request = SearchRequest(query=query, project="/repo", mode=mode, limit=10)  # type: ignore[arg-type]
        outcome = anyio.run(partial(search, keywords=keywords), store, settings, service, request)
        return [c.ref for c in outcome.hits]

    for mode in ("hybrid", "keyword", "semantic"):
        samples = []
        for _ in range(queries):
            query = _text(rng, rng.randint(2, 5))
            started = time.perf_counter()
            run(query, mode)
            samples.append((time.perf_counter() - started) * 1000)
        out[f"{mode} search p50 ms"] = round(percentile(samples, 50), 2)
        out[f"{mode} search p95 ms"] = round(percentile(samples, 95), 2)
    # The vector half alone (what the worker's matrix or the database's HNSW index answers for a
    # hybrid search: the project's best candidates), the query already embedded.
    pid = store.read_sync(lambda c: projects.find(c, "/repo"))
    samples = []
    for _ in range(queries):
        vector = service.embed_query(_text(rng, rng.randint(2, 5)))
        assert vector is not None and service.index is not None
        started = time.perf_counter()
        service.index.search(vector, project_id=pid, kinds=None, limit=settings.search.candidates)
        samples.append((time.perf_counter() - started) * 1000)
    out["vector half p50 ms"] = round(percentile(samples, 50), 2)
    out["vector half p95 ms"] = round(percentile(samples, 95), 2)
    # The keyword half alone (a hybrid search's keyword pass: frequencies and best candidates).
    samples, read, truncated = [], [], 0
    for _ in range(queries):
        request = SearchRequest(query=_text(rng, rng.randint(2, 5)), project="/repo")
        started = time.perf_counter()
        store.read_sync(lambda c, r=request: _keyword_pass(c, r, settings, pid, True, keywords))
        samples.append((time.perf_counter() - started) * 1000)
        if isinstance(keywords, DatabaseKeywords):
            read.append(keywords.rows_read)
            truncated += keywords.truncated
    out["keyword half p50 ms"] = round(percentile(samples, 50), 2)
    out["keyword half p95 ms"] = round(percentile(samples, 95), 2)
    if read:
        out["keyword rows read per query p50"] = round(percentile(read, 50))
        out["keyword queries past scan_rows %"] = round(100 * truncated / len(read), 1)
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
    if isinstance(store, PgStore) and store.native_vectors:
        # That the searches went through the HNSW index (not a scan of every vector).
        scans = store.read_sync(
            lambda c: c.execute(
                "SELECT COALESCE(SUM(idx_scan), 0) FROM pg_stat_user_indexes "
                "WHERE indexrelname LIKE 'embeddings_context_hnsw_%'"
            ).fetchone()[0]
        )
        out["HNSW index scans"] = int(scans)
    anyio.run(service.stop)
    return out


@contextmanager
def postgres_database(keep: bool = False) -> Iterator[str | None]:
    """A new database's URL on a throwaway local server, or None where none is installed.
    `keep`: the server and the database are left running (their URL printed) for --url."""
    found = pg.find_binaries()
    if not found:
        yield None
        return
    server = pg.started(found[0], SERVER_OPTIONS)
    if keep:
        url = server.url("bench")
        with psycopg.connect(server.url("postgres"), autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench")
        yield url
        print(f"kept: {url} (server data in {server.root}; stop it by the PID in postmaster.pid)")
        return
    try:
        with server.database() as url:
            yield url
    finally:
        server.stop()


@contextmanager
def given_database(url: str | None, keep: bool) -> Iterator[str | None]:
    """--url's database as it is, else a new one (postgres_database)."""
    if url:
        yield url
        return
    with postgres_database(keep) as made:
        yield made


def main() -> int:
    quick = os.environ.get("CAIRN_BENCH_QUICK") == "1"
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=5000 if quick else 20000)
    parser.add_argument("--queries", type=int, default=50 if quick else 200)
    parser.add_argument("--backends", default="sqlite,postgres", help="comma-separated")
    parser.add_argument(
        "--keywords",
        choices=("database", "memory"),
        default="database",
        help="on PostgreSQL: keyword search in the database (the app's) or the in-memory index",
    )
    parser.add_argument(
        "--extrapolate-to",
        type=int,
        default=0,
        help="also print the build times projected to this many items (marked as projected)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave the PostgreSQL server and its built database running, for --url",
    )
    parser.add_argument(
        "--url",
        default="",
        help="measure PostgreSQL on this database, which a --keep run built with the same "
        "--items (the 1M build takes most of an hour): no build, the corpus as it is",
    )
    args = parser.parse_args()
    wanted = set(args.backends.split(","))
    results: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {
        "postgres": pg.SKIP_REASON,
        "vectors": f"random unit vectors of {DIM} dims stored for every item (the real model "
        "would take hours to embed 1M texts on 2 CPUs); queries embedded by the fake embedder",
    }
    if "sqlite" in wanted:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = Store(Path(tmp) / "cairn.db")
            sqlite.open()
            # On SQLite the other writer is the same store (one worker per file).
            results["sqlite"] = measure(sqlite, sqlite, args.items, args.queries)
            sqlite.close()
    with given_database(args.url, args.keep) as url:
        if url is not None and "postgres" in wanted:
            stores = PgStore(url), PgStore(url)  # two workers of one team database
            for store in stores:
                store.open()
            notes["postgres"] = f"{pg.find_binaries()[0].version}; {stores[0].vector_search}"
            results["postgres"] = measure(
                *stores, args.items, args.queries, args.keywords, built=bool(args.url)
            )
            for store in stores:
                store.close()
    rows: list[Row] = []
    for name, got in results.items():
        for k, v in got.items():
            if k == "hybrid search p95 ms" and args.items >= 1_000_000:
                rows.append((f"{name}: {k}", v, "< 100 ms at 1M", float(v) < 100))
            else:
                rows.append((f"{name}: {k}", v, "", None))
    projected = _projected(results, args.items, args.extrapolate_to)
    rows += [(f"PROJECTED, not measured: {k}", v, "", None) for k, v in projected.items()]
    report(
        "search_backends",
        f"search, {args.items} observations + {args.items // 10} memories, {args.queries} queries",
        rows,
        {
            "items": args.items,
            "queries": args.queries,
            "backends": notes,
            "results": results,
            "projected_not_measured": projected,
        },
    )
    return 0


def _projected(results: dict[str, dict[str, Any]], n: int, target: int) -> dict[str, float]:
    """Build times at `target` items from those measured at `n`: writes linear in the rows,
    the HNSW build as n log n (each insertion searches a graph of log-growing depth)."""
    if target <= n:
        return {}
    scale = target / n
    out: dict[str, float] = {}
    for name, got in results.items():
        for key in ("items write s", "vectors write s", "vectors copy s"):
            if key in got:
                out[f"{name}: {key} at {target}"] = round(got[key] * scale, 1)
        if "HNSW build s" in got:
            growth = scale * math.log(target) / math.log(n)
            out[f"{name}: HNSW build s at {target}"] = round(got["HNSW build s"] * growth, 1)
    return out


if __name__ == "__main__":
    sys.exit(main())
