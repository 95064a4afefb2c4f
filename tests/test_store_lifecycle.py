"""The lifecycle queries (store/lifecycle.py) and what runs on them (compression), on SQLite and
PostgreSQL (`backend_store`): archive and restore in bulk, forget with every trace, the stored
vectors of a scope, expiry."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.memory import compress
from worker.retrieval.embedder import FakeEmbedder
from worker.settings import Settings
from worker.store import Store, lifecycle, memories, memory_vectors, observations, projects
from worker.store import items as item_store
from worker.store import relations as rq
from worker.store.pg import PgStore

AnyStore = Store | PgStore
T0 = 1_700_000_000_000


def observed(store: AnyStore, *titles: str) -> list[int]:
    items = [{"project": "/repo", "type": "command", "title": t} for t in titles]
    rows = store.write_sync(lambda c: observations.insert_many(c, items))
    return [int(row["id"]) for row, _ in rows]


def saved(store: AnyStore, *contents: str, **fields: Any) -> list[int]:
    def write(conn: Any) -> list[int]:
        return [
            memories.insert(conn, {"content": text, "kind": "fact", **fields})[0]["id"]
            for text in contents
        ]

    return store.write_sync(write)


def test_archive_restore_and_forget_observations(backend_store: AnyStore) -> None:
    a, b, c = observed(backend_store, "ls", "make test", "git status")
    changed = backend_store.write_sync(
        lambda db: lifecycle.archive(db, "observation", [a, b], T0, "cap")
    )
    assert changed == 2
    # Already archived ones are not archived again (their reason and time stay).
    assert (
        backend_store.write_sync(
            lambda db: lifecycle.archive(db, "observation", [a, c], T0 + 1, "decay")
        )
        == 1
    )
    reasons = backend_store.read_sync(
        lambda db: db.execute("SELECT id, archive_reason FROM observations ORDER BY id").fetchall()
    )
    assert [tuple(r) for r in reasons] == [(a, "cap"), (b, "cap"), (c, "decay")]
    assert backend_store.read_sync(lambda db: lifecycle.live_observation_counts(db)) == []
    later = 4_000_000_000_000  # after the rows' own dates: the anchor of its decay clock
    assert backend_store.write_sync(lambda db: lifecycle.restore_observation(db, a, later))
    pid = backend_store.read_sync(lambda db: projects.find(db, "/repo"))
    assert backend_store.read_sync(lambda db: lifecycle.live_observation_counts(db)) == [(pid, 1)]
    decay_rows = backend_store.read_sync(lambda db: lifecycle.observation_decay_rows(db, pid))
    assert [(r[0], r[1], r[4]) for r in decay_rows] == [(a, "command", later)]
    assert backend_store.write_sync(lambda db: lifecycle.delete_observation(db, b))
    assert not backend_store.write_sync(lambda db: lifecycle.delete_observation(db, b))
    assert backend_store.read_sync(lambda db: observations.get(db, b)) is None
    assert not backend_store.write_sync(lambda db: lifecycle.restore_observation(db, b, T0))  # fmt: skip


def test_expiry_scopes_and_counts(backend_store: AnyStore) -> None:
    expired, pinned, _kept = saved(backend_store, "old", "pinned", "kept", project="/repo")
    backend_store.write_sync(
        lambda db: db.execute(
            "UPDATE memories SET expires_at = ?, pinned = (CASE WHEN id = ? THEN 1 ELSE 0 END) "
            "WHERE id IN (?, ?)",
            (T0, pinned, expired, pinned),
        )
    )
    (global_one,) = saved(backend_store, "a global fact")
    pid = backend_store.read_sync(lambda db: projects.find(db, "/repo"))
    assert backend_store.read_sync(lambda db: lifecycle.expired_memories(db, T0)) == [expired]
    assert backend_store.read_sync(lambda db: lifecycle.expired_memories(db, T0 - 1)) == []
    assert backend_store.read_sync(lambda db: lifecycle.expired_memories(db, T0, -1)) == []
    assert sorted(
        backend_store.read_sync(lambda db: lifecycle.memory_scopes(db)), key=str
    ) == sorted([pid, None], key=str)
    assert backend_store.read_sync(lambda db: lifecycle.live_memory_count(db)) == 4
    assert backend_store.read_sync(lambda db: lifecycle.live_memory_count(db, pid)) == 3
    assert (
        backend_store.write_sync(
            lambda db: lifecycle.archive(db, "memory", [global_one], T0, "manual")
        )
        == 1
    )
    assert backend_store.read_sync(lambda db: lifecycle.memory_scopes(db)) == [pid]
    listed = backend_store.read_sync(lambda db: projects.list_all(db))
    assert [(p["key"], p["memories"], p["observations"]) for p in listed] == [("/repo", 3, 0)]


def test_the_vectors_of_a_scope_are_its_live_latest_memories(backend_store: AnyStore) -> None:
    one, two, old = saved(backend_store, "one", "two", "old", project="/repo")
    (glob,) = saved(backend_store, "global")
    pid = backend_store.read_sync(lambda db: projects.find(db, "/repo"))

    def write(db: Any) -> None:
        for mid, scope in ((one, pid), (two, pid), (old, pid), (glob, None)):
            memory_vectors.save(db, mid, scope, "m", np.full(4, float(mid), dtype=np.float32))
        rq.add(db, two, old, "updates")

    backend_store.write_sync(write)
    ids, blobs, model = backend_store.read_sync(lambda db: lifecycle.memory_vectors(db, pid))
    assert (ids, model, len(blobs)) == ([one, two], "m", 2)
    ids, _blobs, _model = backend_store.read_sync(lambda db: lifecycle.memory_vectors(db, None))
    assert ids == [glob]
    backend_store.write_sync(lambda db: lifecycle.forget_traces(db, "memory", [one, glob]))
    assert backend_store.read_sync(lambda db: lifecycle.memory_vectors(db, None)) == ([], [], None)
    loaded = backend_store.read_sync(
        lambda db: item_store.load_items(db, [("memory", two), ("memory", old)])
    )
    assert loaded[("memory", old)]["superseded_by"] == two
    assert (
        loaded[("memory", two)]["title"] == "two" and loaded[("memory", two)]["project"] == "/repo"
    )


def test_compression_merges_a_near_duplicate_into_its_keeper(
    backend_store: AnyStore, settings: Settings
) -> None:
    keep, dup, other = saved(
        backend_store,
        "Use pnpm instead of npm for installing packages",
        "Use pnpm, not npm, for installing packages. The lockfile is pnpm-lock.yaml.",
        "The CI cache key includes the Node version",
        project="/repo",
    )
    backend_store.write_sync(
        lambda db: db.execute(
            "UPDATE memories SET kind = 'decision', importance = 4 WHERE id = ?", (keep,)
        )
    )
    plan = backend_store.write_sync(lambda db: compress.run(db, settings, dry_run=True))
    assert plan["method"] == "lexical" and plan["merged"] == 1
    done = backend_store.write_sync(lambda db: compress.run(db, settings, dry_run=False))
    assert [(m["keep_id"], m["archive_id"]) for m in done["merges"]] == [(keep, dup)]
    rows = {
        r["id"]: r
        for r in backend_store.read_sync(lambda db: memories.get_many(db, [keep, dup, other]))
    }
    assert "pnpm-lock.yaml" in rows[keep]["content"]
    assert rows[dup]["archive_reason"] == "merged" and not rows[other]["archived"]
    rels = backend_store.read_sync(lambda db: rq.for_memory(db, keep))
    assert [(r["kind"], r["to_id"], r["reason"]) for r in rels] == [("derives", dup, "compress")]
    assert (
        backend_store.write_sync(lambda db: compress.run(db, settings, dry_run=False))["merged"]
        == 0
    )


def test_compression_reads_the_stored_vectors_and_supersedes_a_changed_value(
    backend_store: AnyStore, settings: Settings
) -> None:
    texts = [
        "Run the database migrations before starting the API server",
        "Before starting the API server run the database migrations first",
        "Frontend bundles are built with Vite",
    ]
    ids = saved(backend_store, *texts, project="/repo")
    pid = backend_store.read_sync(lambda db: projects.find(db, "/repo"))

    def write(db: Any) -> None:
        for mid, vector in zip(ids, FakeEmbedder(256).embed(texts), strict=True):
            memory_vectors.save(db, mid, pid, "fake-hash-256", vector)

    backend_store.write_sync(write)
    done = backend_store.write_sync(lambda db: compress.run(db, settings, dry_run=False))
    assert done["method"] == "embeddings" and done["embedded"] == 3
    assert [(m["archive_id"], m["keep_id"]) for m in done["merges"]] == [(ids[0], ids[1])]
    old, new = saved(
        backend_store,
        "Use PostgreSQL 15 for the database server",
        "Use PostgreSQL 16 for the database server",
        project="/other",
    )
    done = backend_store.write_sync(lambda db: compress.run(db, settings, dry_run=False))
    assert (done["merged"], done["superseded"]) == (0, 1)
    row = backend_store.read_sync(lambda db: memories.get(db, old))
    assert row is not None and row["superseded_by"] == new
