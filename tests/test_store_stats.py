"""Counts by type, project and day (GET /api/stats, the dashboard's stats page): the same
figures as every row counted one by one (the plain GROUP BY queries they replace sorted every
row), on SQLite and on PostgreSQL (`backend_store`, conftest)."""

from __future__ import annotations

import random
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from worker.store import Store, observations, stats
from worker.store.db import Db
from worker.store.pg import PgStore

AnyStore = Store | PgStore

HOUR_MS = 3_600_000


def _reference(conn: Db, project: str | None, days: int) -> dict[str, Any]:
    """Every row counted in Python, by the database's clock, as the oracle."""
    now_s = int(conn.execute(f"SELECT {conn.dialect.epoch_seconds_now()}").fetchone()[0])
    rows = conn.execute(
        "SELECT o.type, p.key, p.name, o.created_at FROM observations o "
        "JOIN projects p ON p.id = o.project_id"
    ).fetchall()
    rows = [r for r in rows if project is None or r[1] == project]
    by_type = Counter(str(r[0]) for r in rows)
    by_project = Counter((str(r[1]), str(r[2])) for r in rows)
    since = (now_s - days * 86_400) * 1000
    by_day = Counter(
        datetime.fromtimestamp(int(r[3]) // 1000, UTC).strftime("%Y-%m-%d")
        for r in rows
        if int(r[3]) >= since
    )
    return {
        "by_type": dict(by_type),
        "by_project": {key: (name, n) for (key, name), n in by_project.items()},
        "by_day": [{"day": day, "count": n} for day, n in sorted(by_day.items())],
    }


@pytest.fixture
def filled(backend_store: AnyStore) -> AnyStore:
    store = backend_store
    rng = random.Random(11)
    now = int(time.time() * 1000)
    # Hours back from now: the window's edges, whole days, older than any window asked for,
    # and rows dated in the future (imports may carry any date).
    offsets = [rng.randint(0, 40 * 24) for _ in range(600)]
    offsets += [0, 1, 23, 24, 25, 30 * 24 - 1, 30 * 24 + 1, 7 * 24, 90 * 24, -5, -30, -24 * 400]
    items = [
        {
            "project": f"/repo/{rng.randint(0, 3)}",
            "type": rng.choice(observations.TYPES),
            "title": f"item {i}",
            "created_at_ms": now - hours * HOUR_MS - rng.randint(0, HOUR_MS - 1),
        }
        for i, hours in enumerate(offsets)
    ]
    store.write_sync(lambda c: observations.insert_many(c, items))
    return store


@pytest.mark.parametrize("project", [None, "/repo/2", "/nowhere"])
@pytest.mark.parametrize("days", [1, 7, 30, 365])
def test_breakdown_equals_the_plain_group_by_queries(
    filled: AnyStore, project: str | None, days: int
) -> None:
    got = filled.read_sync(lambda c: stats.breakdown(c, project, days))
    want = filled.read_sync(lambda c: _reference(c, project, days))
    assert got["by_type"] == want["by_type"]
    assert list(got["by_type"].values()) == sorted(got["by_type"].values(), reverse=True)
    assert {p["project"]: (p["name"], p["count"]) for p in got["by_project"]} == want["by_project"]
    counts = [p["count"] for p in got["by_project"]]
    assert counts == sorted(counts, reverse=True)
    assert got["by_day"] == want["by_day"]
    if project != "/nowhere":
        assert got["by_day"] and got["by_type"]
    else:
        assert got == {"by_type": {}, "by_project": [], "by_day": []}


def test_an_empty_database_has_empty_charts(backend_store: AnyStore) -> None:
    assert backend_store.read_sync(lambda c: stats.breakdown(c, None, 30)) == {
        "by_type": {},
        "by_project": [],
        "by_day": [],
    }
