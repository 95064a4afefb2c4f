"""The memories store module on both databases: each test runs on a SQLite file and on a real
PostgreSQL database (`backend_store`, conftest), the module's SQL written once (store/db.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from worker.store import Store, memories, memory_vectors, projects
from worker.store.errors import InvalidValue
from worker.store.memories import MemoryQuery
from worker.store.pg import PgStore

AnyStore = Store | PgStore
APP = "github.com/acme/app"  # a project keyed by its git remote, as on a team database


def item(content: str, **fields: Any) -> dict[str, Any]:
    return {"content": content, "kind": "fact", "project": APP, **fields}


def save(store: AnyStore, content: str, **fields: Any) -> dict[str, Any]:
    row, _created = store.write_sync(lambda c: memories.insert(c, item(content, **fields)))
    return row


def page(store: AnyStore, **query: Any) -> list[str]:
    rows, _cursor = store.read_sync(lambda c: memories.list_page(c, MemoryQuery(**query)))
    return [r["content"] for r in rows]


def test_a_memory_is_stored_and_read_back_with_its_author_and_project(
    backend_store: AnyStore,
) -> None:
    row, created = backend_store.write_sync(
        lambda c: memories.insert(
            c,
            item(
                "We deploy from the release branch",
                kind="decision",
                tags=["deploy", "git"],
                importance=4,
                pinned=True,
                author="ann@example.com",
                session_id="s-1",
                meta={"source": "test"},
                created_at_ms=1_700_000_000_000,
            ),
        )
    )
    assert created
    assert row["project"] == APP and row["scope"] == "project"
    assert row["author"] == "ann@example.com" and row["session_id"] == "s-1"
    assert (row["kind"], row["importance"], row["pinned"]) == ("decision", 4, True)
    assert row["tags"] == ["deploy", "git"] and row["meta"] == {"source": "test"}
    assert row["created_at"] == "2023-11-14T22:13:20.000Z" and not row["archived"]
    assert backend_store.read_sync(lambda c: memories.get(c, row["id"])) == row
    assert backend_store.read_sync(lambda c: memories.get(c, row["id"] + 1000)) is None
    project_id = backend_store.read_sync(lambda c: projects.find(c, APP))
    assert project_id is not None and row["id"] > 0

    global_row = save(backend_store, "Answers are in English", scope="global")
    assert global_row["scope"] == "global" and global_row["project"] is None


def test_the_same_content_merges_and_a_repeated_event_is_ignored(
    backend_store: AnyStore,
) -> None:
    first = save(backend_store, "The cache TTL is 60 s", event_id="e-1")
    again, created = backend_store.write_sync(
        lambda c: memories.insert(c, item("the cache  TTL is 60 S"))
    )
    assert not created and again["id"] == first["id"] and again["hit_count"] == 1
    replay, created = backend_store.write_sync(
        lambda c: memories.insert(c, item("The cache TTL is 60 s", event_id="e-1"))
    )
    assert not created and replay["hit_count"] == 1  # the event was counted once
    # The same text in another scope is another memory.
    other = save(backend_store, "The cache TTL is 60 s", scope="global")
    assert other["id"] != first["id"]


def test_update_changes_only_the_listed_columns(backend_store: AnyStore) -> None:
    row = save(backend_store, "Builds take 4 minutes", tags=["ci"])
    backend_store.write_sync(
        lambda c: memories.update(
            c, row["id"], {"content": "Builds take 9 minutes", "importance": 5, "id": 999}
        )
    )
    after = backend_store.read_sync(lambda c: memories.get(c, row["id"]))
    assert after is not None
    assert (after["id"], after["content"], after["importance"]) == (
        row["id"],
        "Builds take 9 minutes",
        5,
    )
    assert after["tags"] == ["ci"] and after["created_at"] == row["created_at"]


def test_a_page_filters_and_pages_newest_first(backend_store: AnyStore) -> None:
    save(backend_store, "alpha note", kind="note", session_id="s-a")
    save(backend_store, "beta decision", kind="decision", pinned=True, importance=5)
    save(backend_store, "gamma lesson about Redis", kind="lesson", tags=["Redis"])
    save(backend_store, "delta global preference", scope="global", kind="preference")
    save(backend_store, "epsilon elsewhere", project="github.com/acme/other")

    assert page(backend_store, project=APP) == [
        "gamma lesson about Redis",
        "beta decision",
        "alpha note",
    ]
    assert page(backend_store, project=APP, include_global=True)[0] == "delta global preference"
    assert page(backend_store, scope="global") == ["delta global preference"]
    assert len(page(backend_store, scope="project")) == 4
    assert page(backend_store) == page(backend_store, scope="all")
    assert page(backend_store, project="github.com/acme/none") == []
    assert page(backend_store, project="github.com/acme/none", include_global=True) == [
        "delta global preference"
    ]
    assert page(backend_store, kind="decision") == ["beta decision"]
    assert page(backend_store, pinned=True) == ["beta decision"]
    assert page(backend_store, importance_min=5) == ["beta decision"]
    assert page(backend_store, text="REDIS") == ["gamma lesson about Redis"]
    assert page(backend_store, text="50%") == []  # a % is text, never a pattern
    assert page(backend_store, tag="redis") == ["gamma lesson about Redis"]
    assert page(backend_store, session_id="s-a") == ["alpha note"]

    first, cursor = backend_store.read_sync(lambda c: memories.list_page(c, MemoryQuery(limit=2)))
    assert [r["content"] for r in first] == ["epsilon elsewhere", "delta global preference"]
    assert cursor == first[-1]["id"]
    rest, end = backend_store.read_sync(
        lambda c: memories.list_page(c, MemoryQuery(limit=10, before_id=cursor))
    )
    assert rest[0]["content"] == "gamma lesson about Redis" and end is None
    assert len(first) + len(rest) == 5


def test_archived_and_superseded_memories_leave_the_default_list(
    backend_store: AnyStore,
) -> None:
    old = save(backend_store, "We use PostgreSQL 15")
    new = save(backend_store, "We use PostgreSQL 16")
    gone = save(backend_store, "A stale lesson")

    def change(c: Any) -> None:
        memories.update(c, old["id"], {"superseded_by": new["id"]})
        memories.update(
            c, gone["id"], {"archived_at": 1_700_000_000_000, "archive_reason": "manual"}
        )

    backend_store.write_sync(change)
    assert page(backend_store, project=APP) == ["We use PostgreSQL 16", "We use PostgreSQL 15"]
    assert page(backend_store, project=APP, latest_only=True) == ["We use PostgreSQL 16"]
    assert page(backend_store, project=APP, archived=True) == ["A stale lesson"]
    assert len(page(backend_store, project=APP, include_archived=True)) == 3
    archived = backend_store.read_sync(lambda c: memories.get(c, gone["id"]))
    assert archived is not None and archived["archived"] and archived["archive_reason"] == "manual"
    # Saving an archived memory's text again brings it back.
    back = save(backend_store, "a stale  lesson")
    assert back["id"] == gone["id"] and not back["archived"]

    pid = backend_store.read_sync(lambda c: projects.find(c, APP))
    live = backend_store.read_sync(lambda c: memories.live_in_scope(c, pid))
    assert [r["content"] for r in live] == ["We use PostgreSQL 16", "A stale lesson"]
    some = backend_store.read_sync(
        lambda c: memories.live_rows(c, pid, [old["id"], new["id"], 12345])
    )
    assert [r["id"] for r in some] == [new["id"]]
    assert backend_store.read_sync(lambda c: memories.live_in_scope(c, None)) == []


def test_delete_forgets_the_row_its_vector_and_the_supersession(
    backend_store: AnyStore,
) -> None:
    old = save(backend_store, "Port 8080")
    new = save(backend_store, "Port 9090")

    def link(c: Any) -> None:
        memories.update(c, old["id"], {"superseded_by": new["id"]})
        memory_vectors.save(c, new["id"], None, "m", np.ones(4, dtype=np.float32))

    backend_store.write_sync(link)
    deleted = backend_store.write_sync(lambda c: memories.delete(c, new["id"]))
    assert deleted is not None and deleted["content"] == "Port 9090"
    assert backend_store.read_sync(lambda c: memories.get(c, new["id"])) is None
    restored = backend_store.read_sync(lambda c: memories.get(c, old["id"]))
    assert restored is not None and restored["is_latest"]
    vectors = backend_store.read_sync(
        lambda c: c.execute("SELECT COUNT(*) FROM embeddings").fetchall()[0][0]
    )
    assert vectors == 0
    assert backend_store.write_sync(lambda c: memories.delete(c, new["id"])) is None


def test_many_by_id_in_the_order_asked(backend_store: AnyStore) -> None:
    ids = [save(backend_store, f"memory number {n}")["id"] for n in range(3)]
    got = backend_store.read_sync(lambda c: memories.get_many(c, [ids[2], 999_999, ids[0]]))
    assert [r["id"] for r in got] == [ids[2], ids[0]]


def test_keyword_candidates_rank_by_shared_words_in_the_scope(backend_store: AnyStore) -> None:
    a = save(backend_store, "The deploy script retries uploads three times")
    b = save(backend_store, "The deploy script is in ops")
    save(backend_store, "Uploads go to the bucket", scope="global")
    archived = save(backend_store, "The deploy retries were removed")
    backend_store.write_sync(lambda c: memories.update(c, archived["id"], {"archived_at": 1}))
    pid = backend_store.read_sync(lambda c: projects.find(c, APP))
    rows = backend_store.read_sync(
        lambda c: memories.text_candidates(c, pid, ["deploy", "retry", "uploads"], exclude_id=0)
    )
    assert [r["id"] for r in rows] == [a["id"], b["id"]]  # 3 shared words, then 1
    rows = backend_store.read_sync(
        lambda c: memories.text_candidates(c, pid, ["deploy"], exclude_id=b["id"])
    )
    assert [r["id"] for r in rows] == [a["id"]]
    assert (
        backend_store.read_sync(
            lambda c: memories.text_candidates(c, pid, ['"', "a*b", "NEAR("], exclude_id=0)
        )
        == []
    )  # search syntax in a word is never read as syntax


def test_a_number_past_64_bits_is_an_invalid_value(backend_store: AnyStore) -> None:
    with pytest.raises(InvalidValue, match="out of range"):
        save(backend_store, "too important", importance=2**70)
    assert page(backend_store) == []  # nothing of the failed write stays


def test_vectors_are_searched_by_cosine_in_their_scope(vector_store: AnyStore) -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(size=16).astype(np.float32)
    rows = [save(vector_store, f"fact {n}") for n in range(6)]
    other = save(vector_store, "fact elsewhere", project="github.com/acme/other")
    pid = vector_store.read_sync(lambda c: projects.find(c, APP))
    other_pid = vector_store.read_sync(lambda c: projects.find(c, "github.com/acme/other"))
    # Vectors ever further from `base`: row n is base plus n units of noise.
    noise = rng.normal(size=16).astype(np.float32)
    vectors = [base + n * 0.4 * noise for n in range(6)]

    def store_all(c: Any) -> None:
        for row, vector in zip(rows, vectors, strict=True):
            memory_vectors.save(c, row["id"], pid, "model-a", vector)
        memory_vectors.save(c, other["id"], other_pid, "model-a", base)
        memory_vectors.save(c, rows[5]["id"], pid, "model-a", vectors[5])  # saved twice: replaced

    vector_store.write_sync(store_all)
    found = vector_store.read_sync(
        lambda c: memory_vectors.nearest(c, "model-a", base, pid, limit=4)
    )
    assert [i for i, _ in found] == [r["id"] for r in rows[:4]]
    expected = [float(v @ base / (np.linalg.norm(v) * np.linalg.norm(base))) for v in vectors[:4]]
    assert [c for _, c in found] == pytest.approx(expected, abs=1e-5)
    # Another model, another dimension, an archived or edited memory: not candidates.
    assert vector_store.read_sync(lambda c: memory_vectors.nearest(c, "model-b", base, pid)) == []
    vector_store.write_sync(lambda c: memories.update(c, rows[0]["id"], {"archived_at": 1}))
    vector_store.write_sync(
        lambda c: memories.update(c, rows[1]["id"], {"content": "fact one, edited"})
    )
    found = vector_store.read_sync(
        lambda c: memory_vectors.nearest(c, "model-a", base, pid, limit=10)
    )
    assert [i for i, _ in found] == [r["id"] for r in rows[2:]]
    if isinstance(vector_store, PgStore):
        assert vector_store.vector_search.startswith(
            "pgvector" if vector_store.native_vectors else "worker (numpy)"
        )
