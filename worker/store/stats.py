"""Counts for `cairn status`, the stats endpoint and the dashboard charts."""

from __future__ import annotations

import sqlite3
from typing import Any

from worker.store import projects

TABLES = ("projects", "sessions", "prompts", "observations", "summaries", "memories")


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in TABLES}


DAY_MS = 86_400_000


def breakdown(conn: sqlite3.Connection, project: str | None, days: int) -> dict[str, Any]:
    """Observations by type, by project and per UTC day over the last `days` days (a rolling
    window, as `created_at >= now - days`; later rows count on their own days).

    Each count reads an index in its own order: grouping by type or by day directly made
    SQLite sort every row through a temporary b-tree (at 100k rows ~50 ms per chart; the
    dashboard's stats page, which draws all three, took ~160 ms)."""
    pid: int | None = None
    if project is not None:
        found = projects.find(conn, project)
        pid = found if found is not None else -1
    scope, args = ("WHERE project_id = ?", [pid]) if pid is not None else ("", [])
    # (project, type) groups stream through the observations_type index; a handful of
    # them are then summed per type.
    by_type = {
        r[0]: r[1]
        for r in conn.execute(
            f"SELECT type, SUM(n) FROM (SELECT type, COUNT(*) AS n FROM observations {scope} "
            "GROUP BY project_id, type) GROUP BY type ORDER BY 2 DESC",
            args,
        )
    }
    by_project = [
        {"project": r[0], "name": r[1], "count": r[2]}
        for r in conn.execute(
            f"SELECT p.key, p.name, o.n FROM (SELECT project_id, COUNT(*) AS n FROM observations "
            f"{scope} GROUP BY project_id) o JOIN projects p ON p.id = o.project_id "
            "ORDER BY o.n DESC LIMIT 50",
            args,
        )
    ]
    return {"by_type": by_type, "by_project": by_project, "by_day": _by_day(conn, pid, days)}


def _by_day(conn: sqlite3.Connection, pid: int | None, days: int) -> list[dict[str, Any]]:
    """Non-empty UTC days of the window, oldest first: one index range count per day up to
    today (SQLite's clock, as before), then the few rows dated later grouped as they come."""
    now = int(conn.execute("SELECT CAST(strftime('%s', 'now') AS INTEGER)").fetchone()[0]) * 1000
    start, tomorrow = now - days * DAY_MS, (now // DAY_MS + 1) * DAY_MS
    scope, args = ("AND o.project_id = ?3", [pid]) if pid is not None else ("", [])
    rows = conn.execute(
        f"""WITH RECURSIVE bounds(lo) AS (
                SELECT ?1
                UNION ALL
                SELECT (lo / {DAY_MS} + 1) * {DAY_MS} FROM bounds
                WHERE (lo / {DAY_MS} + 1) * {DAY_MS} < ?2)
            SELECT date(lo / 1000, 'unixepoch'),
                   (SELECT COUNT(*) FROM observations o WHERE o.created_at >= lo
                      AND o.created_at < (lo / {DAY_MS} + 1) * {DAY_MS} {scope})
            FROM bounds""",
        [start, tomorrow, *args],
    ).fetchall()
    later = conn.execute(
        "SELECT date(o.created_at / 1000, 'unixepoch') AS d, COUNT(*) FROM observations o "
        f"WHERE o.created_at >= ?2 {scope} GROUP BY d ORDER BY d",
        [start, tomorrow, *args],
    ).fetchall()
    return [{"day": r[0], "count": r[1]} for r in [*rows, *later] if r[1]]
