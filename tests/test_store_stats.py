"""Counts by type, project and day (GET /api/stats, the dashboard's stats page): the same
figures as the plain GROUP BY queries they replace, which sorted every row."""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Any

import pytest

from worker.store import Store, observations, stats

HOUR_MS = 3_600_000


def _reference(conn: sqlite3.Connection, project: str | None, days: int) -> dict[str, Any]:
    """The straightforward queries (one GROUP BY per chart) as the oracle."""
    where, args = "", []
    if project is not None:
        row = conn.execute("SELECT id FROM projects WHERE key = ?", (project,)).fetchone()
        where, args = "WHERE o.project_id = ?", [row[0] if row else -1]
    by_type = dict(
        conn.execute(f"SELECT o.type, COUNT(*) FROM observations o {where} GROUP BY o.type", args)
    )
    by_project = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT p.key, p.name, COUNT(*) FROM observations o JOIN projects p "
            f"ON p.id = o.project_id {where} GROUP BY p.id",
            args,
        )
    }
    day_where = ("AND " + where[6:]) if where else ""
    by_day = [
        {"day": r[0], "count": r[1]}
        for r in conn.execute(
            "SELECT date(o.created_at / 1000, 'unixepoch') AS d, COUNT(*) FROM observations o "
            "WHERE o.created_at >= (CAST(strftime('%s','now') AS INTEGER) - ? * 86400) * 1000 "
            f"{day_where} GROUP BY d ORDER BY d",
            [days, *args],
        )
    ]
    return {"by_type": by_type, "by_project": by_project, "by_day": by_day}


@pytest.fixture
def filled(store: Store) -> Store:
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
    filled: Store, project: str | None, days: int
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


def test_an_empty_database_has_empty_charts(store: Store) -> None:
    assert store.read_sync(lambda c: stats.breakdown(c, None, 30)) == {
        "by_type": {},
        "by_project": [],
        "by_day": [],
    }
