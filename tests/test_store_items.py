"""store/items.py queries that must stay correct (on SQLite and PostgreSQL, `backend_store`) and
index-driven on a real SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from worker.store import Store, memories, observations, projects, sessions, summaries
from worker.store import items as q
from worker.store.pg import PgStore

AnyStore = Store | PgStore


def _session(store: AnyStore, n: int, created: list[int]) -> list[int]:
    items = [
        {
            "project": "/repo",
            "session_id": "s1",
            "type": "note",
            "title": f"step {i}",
            "created_at_ms": created[i % len(created)],
        }
        for i in range(n)
    ]
    rows = store.write_sync(lambda c: observations.insert_many(c, items))
    return [int(row["id"]) for row, _ in rows]


def test_neighbours_follow_time_then_id_including_ties(backend_store: AnyStore) -> None:
    store = backend_store
    # Three rows share a timestamp: order among them is by id.
    ids = _session(store, 5, [1_000, 2_000, 2_000, 2_000, 3_000])
    got = store.read_sync(lambda c: q.neighbours(c, [("observation", i) for i in ids], 60_000))
    chain = [None, *[("observation", i) for i in ids], None]
    for k, oid in enumerate(ids):
        assert got[("observation", oid)] == (chain[k], chain[k + 2])


def test_neighbours_respect_the_window(backend_store: AnyStore) -> None:
    store = backend_store
    ids = _session(store, 3, [0, 10 * 60_000, 11 * 60_000])
    got = store.read_sync(lambda c: q.neighbours(c, [("observation", ids[1])], 5 * 60_000))
    assert got[("observation", ids[1])] == (None, ("observation", ids[2]))


def test_neighbours_of_global_memories_without_a_session(backend_store: AnyStore) -> None:
    """No project and no session are a thread of their own (NULL matches NULL), apart from a
    project's memories written between them."""

    def write(conn: Any) -> list[int]:
        rows = [(None, 1_000), ("/repo", 1_500), (None, 2_000)]
        return [
            memories.insert(conn, {"content": f"fact {i}", "kind": "fact", "project": project,
                                   "created_at_ms": at})[0]["id"]
            for i, (project, at) in enumerate(rows)
        ]  # fmt: skip

    first, project_one, last = backend_store.write_sync(write)
    refs = [("memory", first), ("memory", project_one), ("memory", last)]
    got = backend_store.read_sync(lambda c: q.neighbours(c, refs, 60_000))
    assert got[("memory", first)] == (None, ("memory", last))
    assert got[("memory", last)] == (("memory", first), None)
    assert got[("memory", project_one)] == (None, None)


def _lookup_work(store: Store, ref: tuple[str, int]) -> int:
    """SQLite VM instructions (in thousands) one neighbours() call runs."""
    ticks = [0]

    def counted(conn: sqlite3.Connection) -> None:
        def tick() -> int:
            ticks[0] += 1
            return 0

        conn.set_progress_handler(tick, 1000)
        try:
            q.neighbours(conn, [ref], 3_600_000)
        finally:
            conn.set_progress_handler(None, 0)

    store.read_sync(counted)
    return ticks[0]


def test_neighbour_lookups_do_not_grow_with_the_session(tmp_path: Path) -> None:
    """With ANALYZE statistics an OR-shaped time range made SQLite sort every row of the
    session per lookup (about a second per search at 100k rows): a lookup must walk an index,
    so its work must not grow with the session's size."""
    work = []
    for n in (300, 3000):
        st = Store(tmp_path / f"{n}.db")
        st.open()
        try:
            ids = _session(st, n, [1_000 + i for i in range(n)])
            st.write_sync(lambda c: c.execute("ANALYZE"))
            work.append(_lookup_work(st, ("observation", ids[n // 2])))
        finally:
            st.close()
    assert work[1] <= work[0] + 2, work


def test_items_of_every_kind_load_in_one_shape(backend_store: AnyStore) -> None:
    def write(conn: Any) -> list[tuple[str, int]]:
        pid = projects.ensure(conn, "/repo")
        sessions.ensure(conn, "s1", pid)
        obs, _ = observations.insert(
            conn, {"project": "/repo", "session_id": "s1", "type": "note", "title": "Noted"}
        )
        mem, _ = memories.insert(conn, {"content": "A fact\nmore", "kind": "fact"})
        prompt = sessions.add_prompt(conn, "s1", pid, "Fix the build\nplease", 5)
        summary, _ = summaries.upsert(
            conn, "s1", pid, request="", completed=["built"], files=["a.py"], learned=[],
            next_steps=["ship"],
        )  # fmt: skip
        return [("observation", obs["id"]), ("memory", mem["id"]), ("prompt", prompt["id"]),
                ("summary", summary["id"])]  # fmt: skip

    refs = backend_store.write_sync(write)
    loaded = backend_store.read_sync(lambda c: q.load_items(c, [*refs, ("memory", 10_000)]))
    assert set(loaded) == set(refs)
    shown = [(loaded[r]["type"], loaded[r]["title"], loaded[r]["project"]) for r in refs]
    assert shown == [("note", "Noted", "/repo"), ("fact", "A fact", None),
                     ("prompt", "Fix the build", "/repo"),
                     ("summary", "Session summary", "/repo")]  # fmt: skip
    summary = loaded[refs[3]]
    assert summary["body"] == "Completed: built\nNext: ship" and summary["files"] == ["a.py"]
