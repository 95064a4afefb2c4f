"""The in-memory vector index and the background embedding service (fake embedder), the
service over each backend (store/vectors.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import anyio
import numpy as np
import pytest

from worker.retrieval.embedder import EmbedderUnavailable, FakeEmbedder
from worker.retrieval.keyword_index import KeywordIndex
from worker.retrieval.search import SearchRequest, search
from worker.retrieval.service import EmbeddingService, context_vector
from worker.retrieval.vectors import VectorIndex
from worker.settings import Settings, load_settings
from worker.store import Store
from worker.store import observations as obs_q
from worker.store import vectors as vector_q
from worker.store.pg import PgStore


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_index_searches_project_plus_global_and_filters_kinds() -> None:
    index = VectorIndex(3)
    index.put(("memory", 1), 1, unit(1, 0, 0))
    index.put(("observation", 2), 1, unit(0.9, 0.1, 0))
    index.put(("memory", 3), None, unit(0.8, 0.2, 0))  # global
    index.put(("memory", 4), 2, unit(1, 0, 0))  # other project
    found = index.search(unit(1, 0, 0), project_id=1, kinds=None, limit=10)
    assert [r for r, _ in found] == [("memory", 1), ("observation", 2), ("memory", 3)]
    assert abs(found[0][1] - 1.0) < 1e-6
    only_memories = index.search(unit(1, 0, 0), project_id=1, kinds=["memory"], limit=10)
    assert [r for r, _ in only_memories] == [("memory", 1), ("memory", 3)]
    everywhere = index.search(unit(1, 0, 0), project_id=None, kinds=None, limit=2)
    assert {r for r, _ in everywhere} == {("memory", 1), ("memory", 4)}


def test_index_grows_replaces_moves_and_drops() -> None:
    index = VectorIndex(2)
    for i in range(1000):
        index.put(("observation", i), 7, unit(1, i / 1000))
    assert len(index) == 1000
    index.put(("observation", 5), 8, unit(0, 1))  # moved to another project
    assert index.search(unit(0, 1), project_id=8, kinds=None, limit=1)[0][0] == ("observation", 5)
    assert ("observation", 5) not in [
        r for r, _ in index.search(unit(0, 1), project_id=7, kinds=None, limit=1000)
    ]
    index.drop(("observation", 6))
    assert index.vector(("observation", 6)) is None and len(index) == 999


def test_context_vector_mixes_in_the_predecessor() -> None:
    plain = {("memory", 1): unit(1, 0), ("memory", 2): unit(0, 1)}
    mixed = context_vector(plain, ("memory", 2), ("memory", 1), 0.5)
    assert abs(float(np.linalg.norm(mixed)) - 1) < 1e-6
    assert 0 < mixed[0] < mixed[1]
    assert context_vector(plain, ("memory", 2), None, 0.5) is plain[("memory", 2)]


def _store(settings: Settings) -> Store:
    store = Store(settings.db_path)
    store.open()
    return store


def _add(store: Store, title: str, body: str = "") -> int:
    row, _ = store.write_sync(
        lambda c: obs_q.insert(c, {"project": "/p", "type": "note", "title": title, "body": body})
    )
    return int(row["id"])


def _wait(service: EmbeddingService, embedded: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if service.wait_idle(5) and service.index is not None and len(service.index) >= embedded:
            return
        time.sleep(0.05)
    raise AssertionError(f"embedder not idle: {service.status()}")


def test_service_catches_up_then_embeds_new_items(
    tmp_path: Path, vector_store: Store | PgStore
) -> None:
    settings = load_settings(home=tmp_path, embed_enabled=True)
    store = vector_store
    first = _add(store, "postgres connection pool exhausted")
    service = EmbeddingService(settings, store, factory=lambda: FakeEmbedder(64))
    service.start()
    try:
        _wait(service, 1)
        second = _add(store, "redis cache eviction policy")
        service.enqueue("observation", [second])
        _wait(service, 2)
        done, total = store.read_sync(lambda c: vector_q.coverage_counts(c, "fake-hash-64"))
        assert (done, total) == (2, 2)
        outcome = anyio.run(
            partial(search, keywords=KeywordIndex()),
            store,
            settings,
            service,
            SearchRequest(query="redis eviction", mode="semantic", project="/p"),
        )
        assert outcome.mode == "semantic"
        assert outcome.hits[0].ref == ("observation", second)
        assert first != second
        # An edited item loses its vector and is embedded again by the sweep.
        store.write_sync(
            lambda c: c.execute("UPDATE observations SET title = 'x y z' WHERE id = ?", (first,))
        )
        assert store.read_sync(lambda c: vector_q.coverage_counts(c, "fake-hash-64")) == (1, 2)
        service.request_sweep()
        deadline = time.monotonic() + 20
        while store.read_sync(lambda c: vector_q.coverage_counts(c, "fake-hash-64"))[0] < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        anyio.run(service.stop)


def test_wait_idle_waits_for_a_requested_sweep(
    tmp_path: Path, vector_store: Store | PgStore
) -> None:
    settings = load_settings(home=tmp_path, embed_enabled=True)
    store = vector_store
    _add(store, "first item")
    service = EmbeddingService(settings, store, factory=lambda: FakeEmbedder(64))
    service.start()
    try:
        _wait(service, 1)
        # Written behind the service's back (as bench/locomo.py does), then a sweep asked for:
        # idle means they are embedded, even when asked before the thread wakes up.
        for i in range(150):
            _add(store, f"item {i} about retries")
        service.request_sweep()
        assert service.wait_idle(20)
        done = store.read_sync(lambda c: vector_q.coverage_counts(c, "fake-hash-64"))
        assert done == (151, 151)
    finally:
        anyio.run(service.stop)


def test_model_change_re_embeds(tmp_path: Path, vector_store: Store | PgStore) -> None:
    settings = load_settings(home=tmp_path, embed_enabled=True)
    store = vector_store
    _add(store, "alpha beta")
    for dims in (32, 48):
        service = EmbeddingService(settings, store, factory=lambda d=dims: FakeEmbedder(d))
        service.start()
        try:
            _wait(service, 1)
        finally:
            anyio.run(service.stop)
        assert store.read_sync(lambda c, d=dims: vector_q.coverage_counts(c, f"fake-hash-{d}")) == (
            1,
            1,
        )


def test_missing_model_degrades_to_keyword_with_status(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path, embed_enabled=True)
    store = _store(settings)
    _add(store, "keyword still works")

    def broken() -> FakeEmbedder:
        raise EmbedderUnavailable("no model files here")

    service = EmbeddingService(settings, store, factory=broken)
    service.start()
    try:
        deadline = time.monotonic() + 10
        while service.status()["status"] != "unavailable":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert service.status()["error"] == "no model files here"
        outcome = anyio.run(
            partial(search, keywords=KeywordIndex()),
            store,
            settings,
            service,
            SearchRequest(query="keyword", mode="semantic"),
        )
        assert outcome.mode == "keyword" and outcome.hits
    finally:
        anyio.run(service.stop)
        store.close()


def test_bad_model_path_is_a_clear_error(tmp_path: Path) -> None:
    from worker.retrieval.embedder import load_embedder

    with pytest.raises(EmbedderUnavailable, match="not a folder"):
        load_embedder("sentence-transformers/all-MiniLM-L6-v2", str(tmp_path / "nope"), tmp_path, 8)


def test_mix_predecessors_follows_chains_from_plain_vectors() -> None:
    index = VectorIndex(2)
    a, b, c = ("memory", 1), ("memory", 2), ("memory", 3)
    for ref, vec in ((a, unit(1, 0)), (b, unit(0, 1)), (c, unit(0, 1))):
        index.put(ref, 1, vec)
    assert index.mix_predecessors([(c, b), (b, a)], 0.5) == 2  # newest first
    # c mixes with b's own vector (0, 1), not with b's mixed one: c stays (0, 1).
    assert np.allclose(index.vector(c), unit(0, 1))
    assert np.allclose(index.vector(b), unit(0.5, 1))
    assert np.allclose(index.vector(a), unit(1, 0))


class _GatedEmbedder(FakeEmbedder):
    """Blocks inside embed() while `hold` is set, so a test can act mid-batch."""

    def __init__(self, dimensions: int) -> None:
        super().__init__(dimensions)
        self.hold = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.hold:
            self.entered.set()
            assert self.release.wait(20)
        return super().embed(texts)


def test_reindex_while_a_batch_embeds_keeps_index_and_table_together(
    tmp_path: Path, vector_store: Store | PgStore
) -> None:
    settings = load_settings(home=tmp_path, embed_enabled=True)
    store = vector_store
    old = [_add(store, f"item {i} about retries") for i in range(3)]
    embedder = _GatedEmbedder(64)
    service = EmbeddingService(settings, store, factory=lambda: embedder)
    service.start()
    try:
        _wait(service, 3)
        embedder.hold = True
        new = _add(store, "redis cache eviction policy")
        service.enqueue("observation", [new])
        assert embedder.entered.wait(20)
        # The batch holding `new` is being embedded: the reindex lands in the middle of it.
        assert service.reindex() == 3
        embedder.hold = False
        embedder.release.set()
        _wait(service, 4)
        assert store.read_sync(lambda c: vector_q.coverage_counts(c, "fake-hash-64")) == (4, 4)
        index = service.index
        assert index is not None and len(index) == 4
        for item_id in [*old, new]:
            assert index.vector(("observation", item_id)) is not None
        outcome = anyio.run(
            partial(search, keywords=KeywordIndex()),
            store,
            settings,
            service,
            SearchRequest(query="redis eviction", mode="semantic", project="/p"),
        )
        assert outcome.hits[0].ref == ("observation", new)
    finally:
        embedder.release.set()
        anyio.run(service.stop)
