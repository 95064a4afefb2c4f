"""The Store: WAL + migrations at open, corrupt files moved aside, group commit, error mapping."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from worker.errors import BadRequest, NotFound
from worker.store import Store
from worker.store import observations as obs
from worker.store.errors import InvalidValue, StoreFull, StoreLocked, StoreUnavailable
from worker.store.migrations import MIGRATIONS


def open_store(path: Path, **kwargs: Any) -> Store:
    store = Store(path, **kwargs)
    store.open()
    return store


def add(conn: sqlite3.Connection, title: str, event_id: str | None = None) -> int:
    item = {"project": "/repo", "type": "note", "title": title, "event_id": event_id}
    row, _ = obs.insert(conn, item)
    return int(row["id"])


@pytest.mark.migrations
def test_open_applies_every_migration_in_wal_mode(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")
    try:
        versions = store.read_sync(
            lambda c: [r[0] for r in c.execute("SELECT version FROM schema_migrations")]
        )
        assert versions == [v for v, _, _ in MIGRATIONS]
        mode = store.read_sync(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0])
        assert mode == "wal"
        assert store.read_sync(lambda c: c.execute("PRAGMA foreign_keys").fetchone()[0]) == 1
    finally:
        store.close()
    # Re-opening applies nothing twice and keeps the data.
    again = open_store(tmp_path / "c.db")
    again.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_database_is_moved_aside_and_a_fresh_one_starts(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "c.db"
    store = open_store(path)
    store.write_sync(lambda c: [add(c, f"row {i} " + "x" * 500) for i in range(300)])
    store.close()
    for side in ("-wal", "-shm"):
        path.with_name(path.name + side).unlink(missing_ok=True)
    raw = bytearray(path.read_bytes())
    if damage == "garbage":
        for offset in range(4096, len(raw), 4096):  # every page after the header page
            raw[offset : offset + 200] = os.urandom(200)
    else:
        raw = raw[: len(raw) // 3]
    path.write_bytes(bytes(raw))

    recovered = open_store(path)
    try:
        assert recovered.recovered_from is not None
        assert recovered.recovered_from.exists()
        assert recovered.recovered_from.name.startswith("c.db.corrupt-")
        assert (
            recovered.read_sync(
                lambda c: c.execute("SELECT COUNT(*) FROM observations").fetchone()[0]
            )
            == 0
        )
        recovered.write_sync(lambda c: add(c, "after recovery"))

        async def write_async() -> int:
            return await recovered.write(lambda c: add(c, "async after recovery"))

        assert asyncio.run(write_async()) > 0
        assert recovered.corrupt_copies() == [recovered.recovered_from]
    finally:
        recovered.close()


def test_not_a_database_at_all_is_moved_aside_without_overwriting(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    for round_ in range(2):  # twice within the same second: two distinct copies
        path.write_bytes(b"this is not sqlite %d" % round_ * 1000)
        for side in ("-wal", "-shm"):
            path.with_name(path.name + side).unlink(missing_ok=True)
        store = open_store(path)
        try:
            assert store.recovered_from is not None
            assert store.recovered_from.read_bytes().startswith(b"this is not sqlite %d" % round_)
        finally:
            store.close()
    assert len(store.corrupt_copies()) == 2


def test_write_sync_rolls_back_on_error(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")
    try:

        def failing(conn: sqlite3.Connection) -> None:
            add(conn, "kept out")
            raise NotFound("nope")

        with pytest.raises(NotFound):
            store.write_sync(failing)
        assert (
            store.read_sync(lambda c: c.execute("SELECT COUNT(*) FROM observations").fetchone()[0])
            == 0
        )
    finally:
        store.close()


def test_concurrent_async_writes_are_group_committed_and_all_acknowledged(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")

    async def main() -> list[int]:
        return await asyncio.gather(
            *[store.write(lambda c, i=i: add(c, f"obs {i}", f"ev-{i}")) for i in range(200)]
        )

    try:
        ids = asyncio.run(main())
        assert len(set(ids)) == 200
        count = store.read_sync(
            lambda c: c.execute("SELECT COUNT(*) FROM observations").fetchone()[0]
        )
        assert count == 200
        # 200 writes queued at once share transactions.
        assert store.writes_committed == 200
        assert store.groups_committed < 200
    finally:
        store.close()


def test_a_failing_write_does_not_undo_the_others_in_its_group(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")

    def bad(conn: sqlite3.Connection) -> int:
        add(conn, "half written")
        raise BadRequest("rejected", field="x")

    async def main() -> list[Any]:
        jobs = []
        for i in range(30):
            fn = bad if i % 3 == 0 else (lambda c, i=i: add(c, f"good {i}"))
            jobs.append(store.write(fn))
        return await asyncio.gather(*jobs, return_exceptions=True)

    try:
        results = asyncio.run(main())
        failures = [r for r in results if isinstance(r, BaseException)]
        assert len(failures) == 10 and all(isinstance(f, BadRequest) for f in failures)
        titles = store.read_sync(
            lambda c: [r[0] for r in c.execute("SELECT title FROM observations")]
        )
        assert sorted(titles) == sorted(f"good {i}" for i in range(30) if i % 3)
    finally:
        store.close()


def test_close_finishes_queued_writes_then_refuses_new_ones(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")
    gate = threading.Event()

    def slow(conn: sqlite3.Connection) -> int:
        gate.wait(5)
        return add(conn, "slow")

    async def main() -> None:
        first = asyncio.ensure_future(store.write(slow))
        rest = [
            asyncio.ensure_future(store.write(lambda c, i=i: add(c, f"q{i}"))) for i in range(5)
        ]
        await asyncio.sleep(0.05)
        closer = asyncio.get_running_loop().run_in_executor(None, store.close)
        await asyncio.sleep(0.05)
        gate.set()
        await closer
        await asyncio.gather(first, *rest)
        with pytest.raises(StoreUnavailable):
            await store.write(lambda c: add(c, "too late"))

    asyncio.run(main())
    reopened = open_store(tmp_path / "c.db")
    try:
        count = reopened.read_sync(
            lambda c: c.execute("SELECT COUNT(*) FROM observations").fetchone()[0]
        )
        assert count == 6
    finally:
        reopened.close()


def test_close_during_a_read_lets_the_read_finish_on_its_connection(tmp_path: Path) -> None:
    """close() used to close a reader another thread was using: a crash of the whole process
    (seen: the keyword index loading while a test closed the store) or, at best, an error."""
    store = open_store(tmp_path / "r.db")
    store.write_sync(lambda c: add(c, "kept"))
    started, gate = threading.Event(), threading.Event()
    result: list[object] = []

    def slow(conn: sqlite3.Connection) -> int:
        started.set()
        gate.wait(5)
        return int(conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0])

    reader = threading.Thread(target=lambda: result.append(store.read_sync(slow)))
    reader.start()
    assert started.wait(5)
    store.close()
    gate.set()
    reader.join(5)
    assert result == [1]
    assert store._all_readers == []  # the busy reader was closed when it was handed back


def test_another_process_holding_the_write_lock_gives_503_after_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.db"
    store = open_store(path, busy_timeout_ms=200)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreLocked, match="busy"):
            store.write_sync(lambda c: add(c, "blocked"))

        async def main() -> None:
            with pytest.raises(StoreLocked, match="busy"):
                await store.write(lambda c: add(c, "blocked async"))

        asyncio.run(main())
        other.execute("ROLLBACK")
        store.write_sync(lambda c: add(c, "after the lock"))  # no lasting damage
    finally:
        other.close()
        store.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_database_gives_507(tmp_path: Path) -> None:  # pragma: no cover - non-root CI
    path = tmp_path / "c.db"
    open_store(path).close()
    path.chmod(0o444)
    store = open_store(path)
    try:
        with pytest.raises(StoreFull):
            store.write_sync(lambda c: add(c, "x"))
    finally:
        store.close()
        path.chmod(0o644)


def test_injected_disk_full_error_gives_507_and_rolls_back(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")

    def full(conn: sqlite3.Connection) -> None:
        add(conn, "never stored")
        raise sqlite3.OperationalError("database or disk is full")

    async def main() -> None:
        with pytest.raises(StoreFull, match="disk is full"):
            await store.write(full)

    try:
        with pytest.raises(StoreFull):
            store.write_sync(full)
        asyncio.run(main())
        assert (
            store.read_sync(lambda c: c.execute("SELECT COUNT(*) FROM observations").fetchone()[0])
            == 0
        )
    finally:
        store.close()


def test_out_of_range_integers_are_a_bad_request_not_a_crash(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")
    try:
        with pytest.raises(InvalidValue, match="out of range"):
            store.read_sync(lambda c: obs.get(c, 2**70))
    finally:
        store.close()


def test_read_only_connection_gives_507_with_a_message(tmp_path: Path) -> None:
    """Root ignores file modes, so make SQLite itself refuse writes (same error path)."""
    store = open_store(tmp_path / "c.db")
    try:
        store.write_sync(lambda c: c.execute("PRAGMA query_only = ON"))
        with pytest.raises(StoreFull, match="read-only"):
            store.write_sync(lambda c: add(c, "x"))
    finally:
        store.close()


def test_group_commit_reports_exactly_what_was_stored_when_the_disk_fills(tmp_path: Path) -> None:
    """Under a size cap SQLite fails some writes with SQLITE_FULL (possibly rolling back the whole
    group's transaction): every write reported as done is stored, every refused one is not."""
    store = open_store(tmp_path / "c.db", max_db_bytes=600_000)

    async def main() -> list[Any]:
        jobs = [
            store.write(lambda c, i=i: add(c, f"row {i} " + "lorem ipsum " * 150))
            for i in range(400)
        ]
        return await asyncio.gather(*jobs, return_exceptions=True)

    try:
        results = asyncio.run(main())
        ok_ids = [r for r in results if isinstance(r, int)]
        failures = [r for r in results if isinstance(r, BaseException)]
        assert ok_ids and failures, "the cap should let some writes in and refuse others"
        assert all(isinstance(f, StoreFull) for f in failures), failures[:3]
        stored = store.read_sync(lambda c: {r[0] for r in c.execute("SELECT id FROM observations")})
        assert stored == set(ok_ids)
    finally:
        store.close()


def _gated_store(tmp_path: Path) -> tuple[Store, threading.Event, Any]:
    """A store whose writer is held by a first job until the gate opens, so the jobs queued
    meanwhile are taken as one group."""
    store = open_store(tmp_path / "c.db")
    gate = threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        gate.wait(5)

    return store, gate, hold


def test_queued_write_items_of_one_function_run_as_one_call(tmp_path: Path) -> None:
    store, gate, hold = _gated_store(tmp_path)
    calls: list[int] = []

    def insert(conn: sqlite3.Connection, titles: list[str]) -> list[int]:
        calls.append(len(titles))
        return [add(conn, t) for t in titles]

    async def main() -> list[Any]:
        first = asyncio.ensure_future(store.write(hold))
        await asyncio.sleep(0.05)  # the writer is inside `hold`
        jobs = [
            asyncio.ensure_future(store.write_items(insert, ["a1", "a2"])),
            asyncio.ensure_future(store.write_items(insert, ["b1"])),
            asyncio.ensure_future(store.write(lambda c: add(c, "plain"))),
            asyncio.ensure_future(store.write_items(insert, ["c1", "c2", "c3"])),
            asyncio.ensure_future(store.write_items(insert, ["d1"])),
        ]
        await asyncio.sleep(0.05)
        gate.set()
        await first
        return await asyncio.gather(*jobs)

    try:
        a, b, plain, c, d = asyncio.run(main())
        # Consecutive jobs of one function share a call; the plain write splits the runs.
        assert calls == [3, 4]
        assert (len(a), len(b), len(c), len(d)) == (2, 1, 3, 1)
        assert a + b + [plain] + c + d == sorted(a + b + [plain] + c + d)  # queue order
        titles = store.read_sync(
            lambda conn: dict(conn.execute("SELECT id, title FROM observations").fetchall())
        )
        assert [titles[i] for i in a + b + c + d] == ["a1", "a2", "b1", "c1", "c2", "c3", "d1"]
        assert store.groups_committed == 2 and store.writes_committed == 6
    finally:
        store.close()


def test_a_failing_item_fails_only_its_own_write_items_call(tmp_path: Path) -> None:
    store, gate, hold = _gated_store(tmp_path)

    def insert(conn: sqlite3.Connection, titles: list[str]) -> list[int]:
        if "bad" in titles:
            raise BadRequest("rejected", field="title")
        return [add(conn, t) for t in titles]

    async def main() -> list[Any]:
        first = asyncio.ensure_future(store.write(hold))
        await asyncio.sleep(0.05)
        jobs = [
            asyncio.ensure_future(store.write_items(insert, titles))
            for titles in (["x1"], ["x2", "bad"], ["x3"])
        ]
        await asyncio.sleep(0.05)
        gate.set()
        await first
        return await asyncio.gather(*jobs, return_exceptions=True)

    try:
        x1, bad, x3 = asyncio.run(main())
        assert isinstance(bad, BadRequest)
        assert len(x1) == 1 and len(x3) == 1
        titles = store.read_sync(
            lambda c: sorted(r[0] for r in c.execute("SELECT title FROM observations"))
        )
        assert titles == ["x1", "x3"]  # x2 was rolled back with its own call
    finally:
        store.close()


def test_a_merged_call_with_the_wrong_result_count_is_run_again_per_job(tmp_path: Path) -> None:
    store, gate, hold = _gated_store(tmp_path)

    def insert(conn: sqlite3.Connection, titles: list[str]) -> list[int]:
        ids = [add(conn, t) for t in titles]
        return ids[:1]  # right only for one item

    async def main() -> list[Any]:
        first = asyncio.ensure_future(store.write(hold))
        await asyncio.sleep(0.05)
        jobs = [asyncio.ensure_future(store.write_items(insert, [t])) for t in ("p", "q")]
        await asyncio.sleep(0.05)
        gate.set()
        await first
        return await asyncio.gather(*jobs)

    try:
        p, q = asyncio.run(main())
        titles = store.read_sync(
            lambda c: dict(c.execute("SELECT id, title FROM observations").fetchall())
        )
        assert [titles[p[0]], titles[q[0]]] == ["p", "q"] and len(titles) == 2
    finally:
        store.close()


def test_while_writes_are_concurrent_the_writer_waits_for_more_to_join(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db", group_commit_delay=0.5)
    gate = threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        gate.wait(5)

    async def main() -> None:
        # Alone, then nothing pending: no wait.
        await store.write(lambda c: add(c, "lone 1"))
        await store.write(lambda c: add(c, "lone 2"))
        assert store.groups_delayed == 0
        # Two writes queued behind a held one commit as a group of two: writes are concurrent.
        held = asyncio.ensure_future(store.write(hold))
        await asyncio.sleep(0.05)
        pair = [asyncio.ensure_future(store.write(lambda c: add(c, "queued"))) for _ in "ab"]
        await asyncio.sleep(0.05)
        gate.set()
        await asyncio.gather(held, *pair)
        assert store.groups_delayed == 0
        before = store.groups_committed
        # The next write waits; one arriving 0.1 s later joins its transaction.
        third = asyncio.ensure_future(store.write(lambda c: add(c, "third")))
        await asyncio.sleep(0.1)
        fourth = asyncio.ensure_future(store.write(lambda c: add(c, "fourth")))
        await asyncio.gather(third, fourth)
        assert store.groups_committed == before + 1
        assert store.groups_delayed == 1

    try:
        asyncio.run(main())
    finally:
        store.close()


def test_without_a_delay_the_writer_never_waits(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db", group_commit_delay=0.0)

    async def main() -> None:
        await asyncio.gather(*(store.write(lambda c, i=i: add(c, f"w{i}")) for i in range(50)))

    try:
        asyncio.run(main())
        assert store.groups_delayed == 0 and store.writes_committed == 50
    finally:
        store.close()
