"""store/items.py queries that must stay correct (on SQLite and PostgreSQL, `backend_store`) and
index-driven on a real SQLite file."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

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


def test_neighbours_stay_in_their_thread_through_ties_and_window_edges(
    backend_store: AnyStore,
) -> None:
    """Threads with and without a session, in two projects, interleaved in time, with ties
    across and within threads, written out of time order (so ids do not follow time), and
    neighbours exactly one window apart: each item's are those a plain reading of the rule
    picks (same project and session, NULL matching NULL; nearest by time then id; within the
    window, its edge included)."""
    window = 2_000
    threads = [("/a", None), ("/a", "s1"), ("/a", "s2"), ("/b", None), ("/b", "s3")]
    rng = random.Random(11)
    picks = [(rng.choice(threads), rng.choice((0, 1_000, 2_000, 4_000, 4_500))) for _ in range(60)]
    items = [
        {"project": project, "session_id": session, "type": "note", "title": f"item {i}",
         "created_at_ms": 1_000_000 + at}
        for i, ((project, session), at) in enumerate(picks)
    ]  # fmt: skip
    rows = backend_store.write_sync(lambda c: observations.insert_many(c, items))
    written = [
        (int(row["id"]), item["project"], item["session_id"], item["created_at_ms"])
        for (row, _), item in zip(rows, items, strict=True)
    ]
    got = backend_store.read_sync(
        lambda c: q.neighbours(c, [("observation", w[0]) for w in written], window)
    )

    def nearest(item: tuple[Any, ...], before: bool) -> tuple[str, int] | None:
        ident, project, session, at = item
        same = [w for w in written if (w[1], w[2]) == (project, session) and w[0] != ident]
        if before:
            side = [w for w in same if (w[3], w[0]) < (at, ident) and w[3] >= at - window]
        else:
            side = [w for w in same if (w[3], w[0]) > (at, ident) and w[3] <= at + window]
        if not side:
            return None
        pick = (max if before else min)(side, key=lambda w: (w[3], w[0]))
        return ("observation", pick[0])

    expected = {("observation", w[0]): (nearest(w, True), nearest(w, False)) for w in written}
    assert got == expected
    assert None in {w[2] for w in written} and len({w[3] for w in written}) < len(written)


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


class _CountedBuffers:
    """A PostgreSQL connection whose every query is also run under EXPLAIN (ANALYZE, BUFFERS):
    the buffers each read, summed in `buffers`."""

    def __init__(self, db: Any) -> None:
        self.db, self.dialect, self.buffers = db, db.dialect, 0

    def execute(self, sql: str, parameters: Any = ()) -> Any:
        plan = self.db.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}", parameters)
        top = plan.fetchone()[0][0]["Plan"]
        self.buffers += top["Shared Hit Blocks"] + top["Shared Read Blocks"]
        return self.db.execute(sql, parameters)


@pytest.mark.postgres
def test_neighbour_lookups_on_postgresql_do_not_grow_with_the_window(pg_url: str) -> None:
    """An item alone in its thread (an observation without a session, as another worker just
    wrote) among many rows of other threads in the window: the planner walked the created_at
    index and filtered every row of the window (40 ms at 100k items, 2.8 s at 1M). Through
    the thread index a lookup's reads must not grow with the rows around it."""
    store = PgStore(pg_url)
    store.open()
    try:
        reads = []
        for round_, rows in enumerate((300, 2700)):  # 300 rows in the window, then 3000
            _session(store, rows, [1_000 + i for i in range(rows)])
            store.write_sync(lambda c: c.execute("ANALYZE"))
            item = {"project": f"/alone{round_}", "type": "note", "title": "alone",
                    "created_at_ms": 10_000}  # fmt: skip
            row, _ = store.write_sync(lambda c, it=item: observations.insert(c, it))
            ref = ("observation", int(row["id"]))

            def counted(c: Any, ref: tuple[str, int] = ref) -> int:
                counter = _CountedBuffers(c)
                assert q.neighbours(counter, [ref], 3_600_000) == {ref: (None, None)}
                return counter.buffers

            reads.append(store.read_sync(counted))
        assert reads[1] <= reads[0] + 4, reads  # 690 against 18 through the created_at index
    finally:
        store.close()


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
