"""Counts for `cairn status`, the stats endpoint and the dashboard charts."""

from __future__ import annotations

import sqlite3
from typing import Any

from worker.store import projects

TABLES = ("projects", "sessions", "prompts", "observations", "summaries", "memories")


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in TABLES}


def breakdown(conn: sqlite3.Connection, project: str | None, days: int) -> dict[str, Any]:
    where = ""
    args: list[object] = []
    if project is not None:
        pid = projects.find(conn, project)
        where, args = "WHERE o.project_id = ?", [pid if pid is not None else -1]
    by_type = {
        r[0]: r[1]
        for r in conn.execute(
            f"SELECT o.type, COUNT(*) FROM observations o {where} GROUP BY o.type ORDER BY 2 DESC",
            args,
        )
    }
    by_project = [
        {"project": r[0], "name": r[1], "count": r[2]}
        for r in conn.execute(
            f"SELECT p.key, p.name, COUNT(*) FROM observations o JOIN projects p "
            f"ON p.id = o.project_id {where} GROUP BY p.id ORDER BY 3 DESC LIMIT 50",
            args,
        )
    ]
    day_where = ("AND " + where[6:]) if where else ""
    by_day = [
        {"day": r[0], "count": r[1]}
        for r in conn.execute(
            f"SELECT date(o.created_at / 1000, 'unixepoch') AS d, COUNT(*) FROM observations o "
            f"WHERE o.created_at >= (CAST(strftime('%s','now') AS INTEGER) - ? * 86400) * 1000 "
            f"{day_where} GROUP BY d ORDER BY d",
            [days, *args],
        )
    ]
    return {"by_type": by_type, "by_project": by_project, "by_day": by_day}
