"""Forgetting that is earned: items age by their project's active days, retention ranks, and a
pass archives only expired memories and what a project holds over its cap (issue 19, item 5).

Time is a test clock: every row is dated from T0 and each pass is given its `now`. The store-level
tests run on SQLite and on a real PostgreSQL database (`backend_store`, conftest).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from worker.memory.decay import DAY_MS, ActivityClock, DecayPolicy, cap_evictions, run_pass
from worker.pages.stats import retention_histogram
from worker.settings import load_settings
from worker.store import Store, lifecycle, migrations, sql_terms
from worker.store.db import Db, SqliteDb
from worker.store.migrations import MIGRATIONS
from worker.store.pg import PgStore

T0 = 1_709_251_200_000  # 2024-03-01T00:00:00Z
HOUR_MS = 3_600_000
POLICY = DecayPolicy()


AnyStore = Store | PgStore


@pytest.fixture
def store(backend_store: AnyStore) -> AnyStore:
    return backend_store


def project(conn: Db, key: str = "/repo/app") -> int:
    return conn.insert(
        "INSERT INTO projects(key, name, created_at) VALUES (?, ?, ?)", (key, key, T0)
    )


def observations(conn: Db, pid: int, rows: list[tuple[str, int, int]]) -> list[int]:
    """Insert (type, importance, created_at) rows; returns their ids in order."""
    start = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM observations").fetchone()[0])
    conn.executemany(
        "INSERT INTO observations(project_id, type, title, content_hash, importance, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(pid, t, f"{t} {i}", f"h{start + i}", imp, at) for i, (t, imp, at) in enumerate(rows)],
    )
    return list(range(start + 1, start + 1 + len(rows)))


def memory(conn: Db, pid: int | None, at: int, **extra: Any) -> int:
    text = f"m {at} {extra}"
    cols = {"project_id": pid, "kind": "fact", "content": text, "content_hash": text,
            "importance": 1, "created_at": at, "updated_at": at, **extra}  # fmt: skip
    return conn.insert(
        f"INSERT INTO memories({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        tuple(cols.values()),
    )


def archived(conn: Db, table: str) -> dict[int, str]:
    rows = conn.execute(
        f"SELECT id, archive_reason FROM {table} WHERE archived_at IS NOT NULL"
    ).fetchall()
    return {int(r[0]): str(r[1]) for r in rows}


def test_items_age_by_their_projects_active_days_only(store: AnyStore) -> None:
    def write(conn: Db) -> tuple[int, int]:
        pid, other = project(conn), project(conn, "/repo/other")
        observations(conn, pid, [("command", 2, T0 + d * DAY_MS) for d in (0, 1, 2)])
        # Another project worked on every day of the next month does not age this one.
        observations(conn, other, [("command", 2, T0 + d * DAY_MS) for d in range(3, 33)])
        return pid, other

    pid, other = store.write_sync(write)
    days = store.read_sync(lambda c: lifecycle.active_days(c, [pid, other, None]))
    assert days[pid] == [T0 // DAY_MS + d for d in (0, 1, 2)]
    assert len(days[other]) == 30 and len(days[None]) == 33
    first_item = np.asarray([T0 + HOUR_MS], dtype=np.float64)
    for idle_days in (1, 14, 60, 400):
        now = T0 + (2 + idle_days) * DAY_MS
        clock = store.read_sync(lambda c, now=now: ActivityClock.load(c, [pid, None], now))
        # Two active days after the first item's day, however long the project then sleeps.
        assert clock.age_ms(pid, first_item).tolist() == [2 * DAY_MS]
    assert clock.age_ms(None, first_item).tolist() == [32 * DAY_MS]


def test_a_project_idle_60_days_archives_nothing(store: AnyStore) -> None:
    """Two weeks of work (commands, edits, memories), then 60 days away: the pass at the return
    archives nothing and the retention of the history is what it was the day work stopped."""

    def write(conn: Db) -> int:
        pid = project(conn)
        rows = [(t, 2, T0 + d * DAY_MS + h * HOUR_MS) for d in range(14) for h in range(8)
                for t in ("command", "file_write", "research")]  # fmt: skip
        observations(conn, pid, rows)
        for d in range(14):
            memory(conn, pid, T0 + d * DAY_MS, importance=1 + d % 5)
        return pid

    pid = store.write_sync(write)
    last_work = T0 + 14 * DAY_MS
    policy = DecayPolicy(observation_cap=5000)
    retention = []
    for idle in (0, 14, 60):
        now = last_work + idle * DAY_MS
        result = store.write_sync(lambda c, now=now: run_pass(c, policy, now))
        assert result["memories"]["archived"] == 0 and result["observations"]["archived"] == 0
        clock = store.read_sync(lambda c, now=now: ActivityClock.load(c, [pid], now))
        retention.append(clock.age_ms(pid, np.asarray([T0, T0 + 13 * DAY_MS], dtype=np.float64)))
    assert all(r.tolist() == retention[0].tolist() for r in retention)
    assert store.read_sync(lambda c: archived(c, "observations") | archived(c, "memories")) == {}


def test_an_import_of_dated_history_archives_nothing(store: AnyStore) -> None:
    """A LoCoMo-like history: 3,122 low-importance memories dated 2022-2023 (turns of 30 sessions)
    and their tool observations, imported today; one pass archives none of them."""
    start = 1_651_363_200_000  # 2022-05-01

    def write(conn: Db) -> None:
        pid = project(conn, "/import/locomo")
        rows = []
        for i in range(3122):
            at = start + (i * 30 // 3122) * 12 * DAY_MS + i * 60_000
            rows.append((pid, "fact", f"speaker: turn {i}", f"h{i}", 1, at, at))
        conn.executemany(
            "INSERT INTO memories(project_id, kind, content, content_hash, importance, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        observations(conn, pid, [("command", 1, start + i * DAY_MS) for i in range(300)])

    store.write_sync(write)
    today = T0 + 700 * DAY_MS
    result = store.write_sync(lambda c: run_pass(c, POLICY, today))
    assert result["memories"]["scanned"] == 3122 and result["observations"]["scanned"] == 300
    assert result["memories"]["archived"] == 0 and result["observations"]["archived"] == 0
    # The history kept its dates: its days are the project's active days, in 2022-2023.
    days = store.read_sync(lambda c: lifecycle.active_days(c, None))
    assert min(d for scope in days.values() for d in scope) == start // DAY_MS
    assert max(d for scope in days.values() for d in scope) < today // DAY_MS - 300


def test_6000_observations_under_a_cap_of_5000_archive_exactly_1000_chatter_first(
    store: AnyStore,
) -> None:
    """A month of work: 1,200 commands, MCP and research calls (chatter), 4,800 edits and notes.
    The cap archives exactly the overflow, all of it chatter, the least retained chatter first."""
    kinds = ["file_write", "command", "file_write", "note", "research", "file_write", "mcp"]
    kinds += ["file_write", "note", "delegation", "web", "file_write", "file_write", "other"]
    kinds += ["file_write", "note", "file_write", "file_write", "web", "file_write", "file_write"]
    kinds += ["command", "note", "web", "file_write"]

    def write(conn: Db) -> list[int]:
        pid = project(conn)
        rows = [(kinds[i % 25], 2, T0 + (i // 200) * DAY_MS + i) for i in range(6000)]
        return observations(conn, pid, rows)

    ids = store.write_sync(write)
    types = [kinds[i % 25] for i in range(6000)]
    chatter = [oid for oid, t in zip(ids, types, strict=True) if t in POLICY.chatter_types]
    assert len(chatter) == 1200
    now = T0 + 30 * DAY_MS
    dry = store.write_sync(lambda c: run_pass(c, POLICY, now, dry_run=True))
    assert dry["observations"]["evicted"] == 1000
    assert store.read_sync(lambda c: archived(c, "observations")) == {}
    result = store.write_sync(lambda c: run_pass(c, POLICY, now))
    assert result["observations"] == {**dry["observations"], "ids": result["observations"]["ids"]}
    gone = store.read_sync(lambda c: archived(c, "observations"))
    assert len(gone) == 1000 and set(gone.values()) == {"cap"}
    assert set(gone) <= set(chatter)

    # Among the chatter, the least retained went: none kept has faded further than one archived
    # (30 active days, day 0..29; a row of day d has 29 - d active days behind it).
    def kept(i: int) -> float:
        return float(0.5 ** ((29 - i // 200) / POLICY.observation_half_lives_days[types[i]]))

    by_id = {oid: kept(i) for i, oid in enumerate(ids)}
    assert max(by_id[i] for i in gone) <= min(by_id[i] for i in set(chatter) - set(gone))
    assert {by_id[i] for i in set(chatter) - set(gone)} > {1.0}
    live = store.read_sync(lambda c: lifecycle.live_observation_counts(c))
    assert [n for _, n in live] == [5000]
    again = store.write_sync(lambda c: run_pass(c, POLICY, now))
    assert again["observations"]["archived"] == 0


def test_cap_order_is_chatter_then_importance_then_retention() -> None:
    ids = np.arange(1, 9, dtype=np.int64)
    chatter = np.asarray([0, 0, 0, 0, 1, 1, 0, 0], dtype=bool)
    importance = np.asarray([3, 1, 2, 1, 5, 2, 2, 2], dtype=np.int64)
    kept = np.asarray([0.9, 0.8, 0.1, 0.9, 1.0, 0.01, 0.5, 0.5], dtype=np.float64)
    assert cap_evictions(ids, chatter, importance, kept, cap=8) == []
    assert cap_evictions(ids, chatter, importance, kept, cap=6) == [5, 6]
    assert cap_evictions(ids, chatter, importance, kept, cap=4) == [2, 4, 5, 6]
    # Then the lowest retention, ties to the older id.
    assert cap_evictions(ids, chatter, importance, kept, cap=2) == [2, 3, 4, 5, 6, 7]


def test_expired_memories_are_archived_but_never_pinned_ones(store: AnyStore) -> None:
    def write(conn: Db) -> tuple[int, int, int]:
        pid = project(conn)
        ancient = memory(conn, pid, T0 - 900 * DAY_MS)
        expired = memory(conn, pid, T0, expires_at=T0 + DAY_MS)
        pinned = memory(conn, pid, T0, expires_at=T0 + DAY_MS, pinned=1)
        return ancient, expired, pinned

    _ancient, expired, _pinned = store.write_sync(write)
    result = store.write_sync(lambda c: run_pass(c, POLICY, T0 + 2 * DAY_MS))
    assert result["memories"] == {"scanned": 3, "expired": 1, "archived": 1, "ids": [expired]}
    assert store.read_sync(lambda c: archived(c, "memories")) == {expired: "expired"}


def test_migration_12_fills_the_active_days_of_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None, factory=SqliteDb)
    sql_terms.register(conn)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(migrations, "MIGRATIONS", [s for s in MIGRATIONS if s[0] <= 11])
        migrations.apply_migrations(conn)
    pid = project(conn)
    conn.execute("INSERT INTO sessions(id, project_id, started_at) VALUES ('s1', ?, ?)", (pid, T0))
    observations(conn, pid, [("command", 2, T0 + d * DAY_MS) for d in (0, 0, 3)])
    memory(conn, pid, T0 + 5 * DAY_MS)
    memory(conn, None, T0 + 9 * DAY_MS)
    conn.close()
    upgraded = Store(path)
    upgraded.open()
    try:
        days = upgraded.read_sync(lambda c: lifecycle.active_days(c, [pid]))
        assert days == {pid: [T0 // DAY_MS + d for d in (0, 3, 5)]}
    finally:
        upgraded.close()


def test_the_stats_chart_ages_items_by_their_projects_active_days() -> None:
    """The dashboard's retention chart: a history left 60 days ago is not shown as faded."""
    settings = load_settings()
    days = {1: [T0 // DAY_MS + d for d in range(10)], 2: [T0 // DAY_MS + 70]}
    days[None] = sorted(days[1] + days[2])
    now = T0 + 70 * DAY_MS
    # (importance, uses, pinned, type, anchor, project): edits of project 1's last day, one
    # command of its first day, and a command of project 2 from a day before its only one.
    rows = [(2, 0, 0, "file_write", T0 + 9 * DAY_MS, 1)] * 4
    rows += [(2, 0, 0, "command", T0, 1), (2, 0, 0, "command", T0 + 69 * DAY_MS, 2)]
    bars = retention_histogram(settings, rows, days, now)
    assert bars is not None
    assert [b.value for b in bars] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 4]
