"""The activity report for a project and a time window (the API's GET /api/report and `cairn
report`): parameters checked here, figures from memory/report.py over store/reports.py rows."""

from __future__ import annotations

from typing import Any

from worker.clock import now_ms
from worker.errors import BadRequest, NotFound
from worker.memory.report import build_report, parse_when
from worker.settings import Settings
from worker.store.db import AnyDb
from worker.store.reports import report_rows, resolve_project


def _when(raw: str | None, name: str, default: int, now: int) -> int:
    if raw is None or raw == "":
        return default
    try:
        return parse_when(raw, now)
    except (ValueError, OverflowError, OSError):
        raise BadRequest(
            f"'{name}' must be an ISO 8601 date/date-time or a span like 7d, 24h, 2w",
            field=name,
        ) from None


def project_scope(conn: AnyDb, text: str | None) -> tuple[int | None, str | None]:
    """(project id, display name) for a key or unique name; (None, None) for every project."""
    if not text:
        return None, None
    rows = resolve_project(conn, text)
    if not rows:
        raise NotFound(f"project {text!r} does not exist", field="project")
    if len(rows) > 1:
        keys = ", ".join(r["key"] for r in rows)
        raise BadRequest(
            f"project name {text!r} is ambiguous; use its key: {keys}", field="project"
        )
    return int(rows[0]["id"]), str(rows[0]["name"])


def make_report(
    conn: AnyDb,
    s: Settings,
    project: str | None,
    since: str | None,
    until: str | None,
    *,
    reader: str | None,
) -> dict[str, Any]:
    """The report for the query parameters (shared by the API and `cairn report`), of the
    prompts and observations `reader` may see (Cairn.reader; store/privacy.py)."""
    now = now_ms()
    until_ms = _when(until, "until", now, now)
    since_ms = _when(since, "since", until_ms - s.sessions.report_default_days * 86_400_000, now)
    if since_ms >= until_ms:
        raise BadRequest("'since' must be before 'until'", field="since")
    pid, name = project_scope(conn, project)
    rows = report_rows(conn, pid, since_ms, until_ms, visible_to=reader)
    return build_report(rows, since=since_ms, until=until_ms, project=name)
