"""Counts for `cairn status`, the stats endpoint and the dashboard charts (SQLite and PostgreSQL
alike, store/db.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from worker.store import projects
from worker.store.db import AnyDb, Db, as_db

TABLES = ("projects", "sessions", "prompts", "observations", "summaries", "memories")


def counts(conn: AnyDb) -> dict[str, int]:
    db = as_db(conn)
    return {t: int(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in TABLES}


DAY_MS = 86_400_000


def breakdown(conn: AnyDb, project: str | None, days: int) -> dict[str, Any]:
    """Observations by type, by project and per UTC day over the last `days` days (a rolling
    window, as `created_at >= now - days`; later rows count on their own days).

    Each count reads an index in its own order: grouping by type or by day directly made
    SQLite sort every row through a temporary b-tree (at 100k rows ~50 ms per chart; the
    dashboard's stats page, which draws all three, took ~160 ms)."""
    db = as_db(conn)
    pid: int | None = None
    if project is not None:
        found = projects.find(db, project)
        pid = found if found is not None else -1
    scope, args = ("WHERE project_id = ?", [pid]) if pid is not None else ("", [])
    # (project, type) groups stream through the observations_type index; a handful of
    # them are then summed per type.
    by_type = {
        r[0]: int(r[1])  # PostgreSQL's SUM of counts is a numeric
        for r in db.execute(
            f"SELECT type, SUM(n) FROM (SELECT type, COUNT(*) AS n FROM observations {scope} "
            "GROUP BY project_id, type) AS counted GROUP BY type ORDER BY 2 DESC",
            args,
        )
    }
    by_project = [
        {"project": r[0], "name": r[1], "count": r[2]}
        for r in db.execute(
            f"SELECT p.key, p.name, o.n FROM (SELECT project_id, COUNT(*) AS n FROM observations "
            f"{scope} GROUP BY project_id) o JOIN projects p ON p.id = o.project_id "
            "ORDER BY o.n DESC LIMIT 50",
            args,
        )
    ]
    return {"by_type": by_type, "by_project": by_project, "by_day": _by_day(db, pid, days)}


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms // DAY_MS * 86_400, UTC).strftime("%Y-%m-%d")


def _by_day(db: Db, pid: int | None, days: int) -> list[dict[str, Any]]:
    """Non-empty UTC days of the window, oldest first: one index range count per day up to
    today (the database's clock, as before), then the few rows dated later grouped as they come."""
    seconds = db.execute(f"SELECT {db.dialect.epoch_seconds_now()}").fetchone()[0]
    now = int(seconds) * 1000
    start, tomorrow = now - days * DAY_MS, (now // DAY_MS + 1) * DAY_MS
    scope, args = ("AND o.project_id = ?", [pid]) if pid is not None else ("", [])
    # Typed bounds: PostgreSQL must know the recursive column is a BIGINT from the first row.
    rows = db.execute(
        f"""WITH RECURSIVE bounds(lo) AS (
                SELECT CAST(? AS BIGINT)
                UNION ALL
                SELECT (lo / {DAY_MS} + 1) * {DAY_MS} FROM bounds
                WHERE (lo / {DAY_MS} + 1) * {DAY_MS} < ?)
            SELECT lo,
                   (SELECT COUNT(*) FROM observations o WHERE o.created_at >= lo
                      AND o.created_at < (lo / {DAY_MS} + 1) * {DAY_MS} {scope})
            FROM bounds ORDER BY lo""",
        [start, tomorrow, *args],
    ).fetchall()
    later = db.execute(
        f"SELECT o.created_at / {DAY_MS} AS d, COUNT(*) FROM observations o "
        f"WHERE o.created_at >= ? {scope} GROUP BY d ORDER BY d",
        [tomorrow, *args],
    ).fetchall()
    counted = [(int(r[0]), int(r[1])) for r in rows]
    counted += [(int(r[0]) * DAY_MS, int(r[1])) for r in later]
    return [{"day": _day(at), "count": n} for at, n in counted if n]
