"""Stats: observations per day, by type and project, retention, embedding coverage, database size."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from worker.clock import now_ms
from worker.ops.status import embedding_stats, import_progress
from worker.pages.charts import Bar, bar_chart, column_chart, gauge
from worker.pages.render import render
from worker.settings import Settings
from worker.store import feed, lifecycle, stats
from worker.store import use as use_store
from worker.store.rows import ms

DAYS = 30
# The viewBox width of a chart in a half-width card: about the pixels it is drawn in on a laptop
# screen, so its 11-12 unit labels stay 11-12 px (at the full-width 640 they shrank to ~7 px).
HALF_WIDTH = 420
# Retention is computed over an even sample of live rows, so the page stays fast at any size.
RETENTION_SAMPLE = 10_000
BUCKETS = 10


def per_day(counts: list[tuple[str, int]], days: int, today: datetime) -> list[Bar]:
    """One bar per calendar day (UTC) for the last `days` days, zero-filled."""
    by_day = dict(counts)
    out = []
    for offset in range(days - 1, -1, -1):
        day = (today - timedelta(days=offset)).strftime("%Y-%m-%d")
        out.append(Bar(day, by_day.get(day, 0)))
    return out


def retention_histogram(
    settings: Settings,
    rows: list[tuple[int, int, int, str | None, int, int | None]],
    days: dict[int | None, list[int]],
    now: int,
) -> list[Bar] | None:
    """Rows bucketed by retention (0-10% ... 90-100%) under the lifecycle's decay curve, each
    aged by its project's active days (`days`, from store.lifecycle.active_days)."""
    try:
        import numpy as np

        from worker.memory import decay
    except ImportError:
        return None
    if not rows:
        return [Bar(_bucket(i), 0) for i in range(BUCKETS)]
    policy = decay.DecayPolicy.from_settings(settings)
    clock = decay.ActivityClock({k: np.asarray(v, dtype=np.int64) for k, v in days.items()}, now)
    importance = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    uses = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    pinned = np.fromiter((bool(r[2]) for r in rows), dtype=bool, count=len(rows))
    # A time that is not a number counts as now (reported once by ms()).
    anchor = np.fromiter(
        (ms(r[4], "item time") or now for r in rows), dtype=np.float64, count=len(rows)
    )
    scope = [r[5] for r in rows]
    age = np.zeros(len(rows), dtype=np.float64)
    for key in set(scope):
        mask = np.fromiter((s == key for s in scope), dtype=bool, count=len(rows))
        age[mask] = clock.age_ms(key, anchor[mask])
    if rows[0][3] is None:
        half = decay.memory_half_lives_array(policy, importance, uses)
    else:
        types = [str(r[3]) for r in rows]
        half = decay.observation_half_lives_array(policy, types, importance, uses)
    value = np.where(pinned, 1.0, decay.retention_array(age, half))
    index = np.minimum(BUCKETS - 1, np.floor(value * BUCKETS).astype(np.int64))
    counts = np.bincount(index, minlength=BUCKETS)
    return [Bar(_bucket(i), int(c)) for i, c in enumerate(counts)]


def use_rate(
    rows: list[tuple[int, int, int]], days: int, today: datetime
) -> tuple[list[Bar], int, int]:
    """Per day (UTC) of the last `days`, the percentage of judged injections that were used
    (a day with none judged shows no bar), and the totals."""
    by_day = {
        datetime.fromtimestamp(day / 1000, tz=UTC).strftime("%Y-%m-%d"): (used, judged)
        for day, used, judged in rows
    }
    bars = []
    for offset in range(days - 1, -1, -1):
        day = (today - timedelta(days=offset)).strftime("%Y-%m-%d")
        used, judged = by_day.get(day, (0, 0))
        bars.append(Bar(day, round(100 * used / judged) if judged else 0, f" of {judged}"))
    return bars, sum(u for u, _ in by_day.values()), sum(j for _, j in by_day.values())


def _bucket(i: int) -> str:
    return f"{i * 100 // BUCKETS}-{(i + 1) * 100 // BUCKETS}%"


async def stats_page(request: Request) -> Response:
    cairn = request.state.cairn
    today = datetime.now(tz=UTC)

    def totals(conn: Any) -> dict[str, Any]:
        return {
            "counts": stats.counts(conn),
            "coverage": feed.embedding_coverage(conn),
            "memories": feed.retention_inputs(conn, "memories", RETENTION_SAMPLE),
            "days": lifecycle.active_days(conn),
            "use": use_store.daily_rate(conn, now_ms() - DAYS * stats.DAY_MS),
        }

    # Three independent scans on separate read connections (SQLite runs them in parallel).
    first, breakdown, sample = await asyncio.gather(
        cairn.store.read(totals),
        cairn.store.read(lambda c: stats.breakdown(c, None, DAYS)),
        cairn.store.read(lambda c: feed.retention_inputs(c, "observations", RETENTION_SAMPLE)),
    )
    data = {**first, "breakdown": breakdown, "observations": sample}
    now = now_ms()
    days = data["days"]
    memory_retention = retention_histogram(cairn.settings, data["memories"], days, now)
    observation_retention = retention_histogram(cairn.settings, data["observations"], days, now)

    embed = await embedding_stats(cairn)
    coverage_rows = data["coverage"]
    total = sum(v["total"] for v in coverage_rows.values())
    done = sum(v["embedded"] for v in coverage_rows.values())
    fraction = float(embed["coverage"]) if "coverage" in embed else (done / total if total else 0.0)

    breakdown = data["breakdown"]
    day_bars = per_day([(d["day"], d["count"]) for d in breakdown["by_day"]], DAYS, today)
    use_bars, used, judged = use_rate(data["use"], DAYS, today)
    charts = {
        "per_day": column_chart(day_bars, title=f"Observations per day, last {DAYS} days"),
        "use_rate": (
            column_chart(use_bars, title=f"Share of injected items used, per day, last {DAYS} days")
            if judged
            else None
        ),
        "by_type": bar_chart(
            [Bar(t, n) for t, n in breakdown["by_type"].items()],
            title="Observations by type",
            width=HALF_WIDTH,
        ),
        "by_project": bar_chart(
            [Bar(p["name"], p["count"]) for p in breakdown["by_project"][:12]],
            title="Observations by project",
            width=HALF_WIDTH,
        ),
        "coverage": gauge(fraction, title="Embedding coverage"),
        "memory_retention": (
            column_chart(
                memory_retention, title="Memories by retention", width=HALF_WIDTH, height=180
            )
            if memory_retention and sum(b.value for b in memory_retention)
            else None
        ),
        "observation_retention": (
            column_chart(
                observation_retention,
                title="Observations by retention",
                width=HALF_WIDTH,
                height=180,
            )
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
            width=HALF_WIDTH,
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
            "db_path": cairn.store.where,
            "embed": embed,
            "week_total": sum(b.value for b in day_bars[-7:]),
            "month_total": sum(b.value for b in day_bars),
            "days": DAYS,
            "has_observations": data["counts"].get("observations", 0) > 0,
            "import_progress": await import_progress(cairn),
            "use": {"used": used, "judged": judged},
        },
    )


async def import_progress_line(request: Request) -> Response:
    """The progress line alone (polled by the stats and feed pages)."""
    progress = await import_progress(request.state.cairn)
    return render(request, "_import_progress.html", {"import_progress": progress})


def routes() -> list[BaseRoute]:
    return [
        Route("/stats", stats_page, methods=["GET"]),
        Route("/stats/import-progress", import_progress_line, methods=["GET"]),
    ]
