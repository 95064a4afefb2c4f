"""A memory's clauses and their cached vectors (retrieval/clauses.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from worker.retrieval.clauses import MAX_CLAUSES, ClauseCosines, clauses
from worker.retrieval.embedder import FakeEmbedder, Vectors
from worker.retrieval.service import EmbeddingService
from worker.settings import load_settings
from worker.store import Store, memories
from worker.store.pg import PgStore

RULE = (
    "pgx: defer rows.Close() right after every Query. Latest() returned early on a Scan error "
    "without closing, leaking pool conns until all 10 were held."
)


class CountingEmbedder(FakeEmbedder):
    """The test embedder (hashed words), counting the texts it was asked for."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += list(texts)
        return super().embed(texts)


def test_a_memory_splits_at_sentence_and_clause_ends_dropping_labels() -> None:
    assert clauses(RULE) == [
        "defer rows.Close() right after every Query.",
        "Latest() returned early on a Scan error without closing, leaking pool conns until all "
        "10 were held.",
    ]
    # An aside in brackets is a clause, a call's brackets are not; "Local dev" and "then air"
    # are labels, not clauses.
    assert clauses("Local dev: `make dev` (docker compose postgres:16 + redis:7) - then air") == [
        "docker compose postgres:16 + redis:7"
    ]


def test_one_clause_gives_none_and_long_texts_are_capped() -> None:
    assert clauses("No Tailwind anywhere in the shop") == []
    assert clauses("") == []
    many = " ".join(f"Sentence number {i} says a thing." for i in range(20))
    assert len(clauses(many)) == MAX_CLAUSES


def test_best_clause_cosine_is_the_closest_clause_and_is_cached() -> None:
    embedder = CountingEmbedder()
    cache = ClauseCosines()
    query = embedder.embed(["defer rows.Close() right after every Query."])[0]
    embedder.texts.clear()
    best = cache.best(embedder, query, {("memory", 1): RULE, ("memory", 2): "One clause only"})
    assert set(best) == {("memory", 1)}  # a one-clause memory is left to its whole vector
    assert np.isclose(best[("memory", 1)], 1.0, atol=1e-5)
    asked = len(embedder.texts)
    assert asked == len(clauses(RULE))
    # The second prompt reuses the clause vectors: nothing is embedded again.
    cache.best(embedder, query, {("memory", 1): RULE})
    assert len(embedder.texts) == asked


def test_the_cache_keeps_the_most_recent_texts_only() -> None:
    embedder = CountingEmbedder()
    cache = ClauseCosines(entries=2)
    query = embedder.embed(["a query"])[0]
    texts = [f"First clause of memory {i}. Second clause of memory {i}." for i in range(3)]
    for i, text in enumerate(texts):
        cache.best(embedder, query, {("memory", i): text})
    embedder.texts.clear()
    cache.best(embedder, query, {("memory", 2): texts[2]})
    assert embedder.texts == []  # still cached
    cache.best(embedder, query, {("memory", 0): texts[0]})
    assert len(embedder.texts) == 2  # evicted, embedded again


def _memory(store: Store | PgStore, content: str) -> int:
    item: dict[str, Any] = {"kind": "lesson", "content": content, "project": "/repo"}
    row, _ = store.write_sync(lambda c: memories.insert(c, {**item, "scope": "project"}))
    return int(row["id"])


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_the_background_embedder_warms_stored_and_new_memories(
    tmp_path: Path, vector_store: Store | PgStore
) -> None:
    settings = load_settings(home=tmp_path, embed_enabled=True)
    stored = [
        _memory(vector_store, f"Rule {i} holds here. Its reason is number {i}.") for i in range(3)
    ]
    archived = _memory(vector_store, "An archived rule says this. And that reason.")
    vector_store.write_sync(
        lambda c: c.execute("UPDATE memories SET archived_at = 1 WHERE id = ?", (archived,))
    )
    service = EmbeddingService(settings, vector_store, factory=lambda: FakeEmbedder(64))
    service.start()
    try:
        # After a start, the stored live memories' clauses are warmed while it is idle ...
        for i in range(3):
            text = f"Rule {i} holds here. Its reason is number {i}."
            _until(lambda t=text: service.clauses.cached(t), f"memory {stored[i]} not warmed")
        assert not service.clauses.cached("An archived rule says this. And that reason.")
        # ... and a memory saved later as soon as it is embedded.
        new = _memory(
            vector_store, "pgx: defer rows.Close() right after Query. It leaks otherwise."
        )
        service.enqueue("memory", [new])
        text = "pgx: defer rows.Close() right after Query. It leaks otherwise."
        _until(lambda: service.clauses.cached(text), "a new memory was not warmed")
    finally:
        anyio.run(service.stop)
