"""Stats: observations per day, by type and project, retention, embedding coverage, database size."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from worker.clock import now_ms
from worker.pages.charts import Bar, bar_chart, column_chart, gauge
from worker.pages.inproc import api, has_route
from worker.pages.render import render
from worker.settings import Settings
from worker.store import feed, stats

DAYS = 30
# Retention is computed for the newest live rows only, so the page stays fast at any size.
RETENTION_SAMPLE = 20_000
BUCKETS = 10


def per_day(counts: list[tuple[str, int]], days: int, today: datetime) -> list[Bar]:
    """One bar per calendar day (UTC) for the last `days` days, zero-filled."""
    by_day = dict(counts)
    out = []
    for offset in range(days - 1, -1, -1):
        day = (today - timedelta(days=offset)).strftime("%Y-%m-%d")
        out.append(Bar(day, by_day.get(day, 0)))
    return out


def retention_histogram(settings: Settings, rows: list[Any], now: int) -> list[Bar] | None:
    """Rows bucketed by retention (0-10% ... 90-100%) with the lifecycle's decay curve."""
    try:
        import numpy as np

        from worker.memory import decay
    except ImportError:
        return None
    policy = decay.DecayPolicy.from_settings(settings)
    counts = [0] * BUCKETS
    for row in rows:
        if row["pinned"]:
            value = 1.0
        elif row["type"] is None:
            half = policy.memory_half_life_days(int(row["importance"]), int(row["uses"]))
            value = decay.retention(now - int(row["anchor"]), half)
        else:
            half = policy.observation_half_life_days(
                str(row["type"]), int(row["importance"]), int(row["uses"])
            )
            value = decay.retention(now - int(row["anchor"]), half)
        counts[min(BUCKETS - 1, int(np.floor(value * BUCKETS)))] += 1
    return [
        Bar(f"{i * 100 // BUCKETS}-{(i + 1) * 100 // BUCKETS}%", c) for i, c in enumerate(counts)
    ]


async def stats_page(request: Request) -> Response:
    cairn = request.state.cairn
    today = datetime.now(tz=UTC)
    since = int((today - timedelta(days=DAYS - 1)).replace(hour=0, minute=0, second=0).timestamp())

    def read(conn: Any) -> dict[str, Any]:
        return {
            "counts": stats.counts(conn),
            "by_day": feed.counts_by_day(conn, since * 1000),
            "by_type": feed.counts_by_type(conn),
            "by_project": feed.counts_by_project(conn),
            "coverage": feed.embedding_coverage(conn),
            "memories": feed.retention_inputs(conn, "memories", RETENTION_SAMPLE),
            "observations": feed.retention_inputs(conn, "observations", RETENTION_SAMPLE),
        }

    data = await cairn.store.read(read)
    now = now_ms()
    memory_retention = retention_histogram(cairn.settings, data["memories"], now)
    observation_retention = retention_histogram(cairn.settings, data["observations"], now)

    embed: dict[str, Any] = {}
    if has_route(request, "GET", "/api/embeddings/stats"):
        result = await api(request, "GET", "/api/embeddings/stats")
        if result.ok and isinstance(result.body, dict):
            embed = result.body
    coverage_rows = data["coverage"]
    total = sum(v["total"] for v in coverage_rows.values())
    done = sum(v["embedded"] for v in coverage_rows.values())
    fraction = float(embed["coverage"]) if "coverage" in embed else (done / total if total else 0.0)

    day_bars = per_day(data["by_day"], DAYS, today)
    charts = {
        "per_day": column_chart(day_bars, title=f"Observations per day, last {DAYS} days"),
        "by_type": bar_chart([Bar(t, n) for t, n in data["by_type"]], title="Observations by type"),
        "by_project": bar_chart(
            [Bar(p, n) for p, n in data["by_project"]], title="Observations by project"
        ),
        "coverage": gauge(fraction, title="Embedding coverage"),
        "memory_retention": (
            column_chart(memory_retention, title="Memories by retention", height=180)
            if memory_retention and sum(b.value for b in memory_retention)
            else None
        ),
        "observation_retention": (
            column_chart(observation_retention, title="Observations by retention", height=180)
            if observation_retention and sum(b.value for b in observation_retention)
            else None
        ),
        "coverage_by_kind": bar_chart(
            [
                Bar(kind, v["embedded"], f" of {v['total']}")
                for kind, v in coverage_rows.items()
                if v["total"]
            ],
            title="Embedded items by kind",
        ),
    }
    return render(
        request,
        "stats.html",
        {
            "title": "Stats",
            "active": "stats",
            "charts": charts,
            "counts": data["counts"],
            "db_size": cairn.store.db_size_bytes(),
            "db_path": str(cairn.store.path),
            "embed": embed,
            "week_total": sum(b.value for b in day_bars[-7:]),
            "has_observations": data["counts"].get("observations", 0) > 0,
        },
    )


def routes() -> list[BaseRoute]:
    return [Route("/stats", stats_page, methods=["GET"])]
