"""Rows behind the activity report: a project's (or every project's) activity in a time window.

Ported to the store's database edge (store/db.py): every function here runs on SQLite and on
PostgreSQL alike, its SQL written once.
"""

from __future__ import annotations

from typing import Any

from worker.store import privacy
from worker.store.db import AnyDb, Row, as_db
from worker.store.summaries import split_lines

MAX_SESSIONS = 200
MAX_FILE_ROWS = 5_000  # distinct files counted per report
MAX_MEMORIES = 200


def report_rows(
    conn: AnyDb, project_id: int | None, since: int, until: int, *, visible_to: str | None
) -> dict[str, Any]:
    """Sessions, file writes, summaries, memories and counts for [since, until); prompts and
    observations (their counts and written files) those `visible_to` may see (store/privacy.py;
    None: all)."""
    db = as_db(conn)
    scope = "" if project_id is None else " AND {alias}.project_id = ?"
    args: list[Any] = [] if project_id is None else [project_id]

    def seen(alias: str) -> tuple[str, list[Any]]:
        if visible_to is None or alias not in ("o", "pr"):
            return "", []
        term, term_args = privacy.shared_or_by(alias, visible_to)
        return f" AND {term}", list(term_args)

    def where(alias: str, column: str) -> tuple[str, list[Any]]:
        term, term_args = seen(alias)
        return (
            f"{alias}.{column} >= ? AND {alias}.{column} < ?" + scope.format(alias=alias) + term,
            [since, until, *args, *term_args],
        )

    clause, params = where("s", "started_at")
    o_seen, o_args = seen("o")
    pr_seen, pr_args = seen("pr")
    active = (
        "s.id IN (SELECT o.session_id FROM observations o WHERE o.created_at >= ?"
        f" AND o.created_at < ? AND o.session_id IS NOT NULL{o_seen}"
        f" UNION SELECT pr.session_id FROM prompts pr WHERE pr.created_at >= ?"
        f" AND pr.created_at < ?{pr_seen})"
    )
    sessions = db.execute(
        "SELECT s.id, s.project_id, p.name AS project_name, p.key AS project_key, s.started_at, "
        "s.ended_at, s.status, su.request, su.next_steps, su.updated_at AS summary_at, "
        f"(SELECT COUNT(*) FROM prompts pr WHERE pr.session_id = s.id{pr_seen}) AS prompts, "
        f"(SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id{o_seen}) AS observations "
        "FROM sessions s JOIN projects p ON p.id = s.project_id "
        "LEFT JOIN summaries su ON su.session_id = s.id "
        f"WHERE (({clause}) OR ({active}{scope.format(alias='s')})) "
        "ORDER BY s.started_at, s.id LIMIT ?",
        [
            *pr_args,
            *o_args,
            *params,
            since,
            until,
            *o_args,
            since,
            until,
            *pr_args,
            *args,
            MAX_SESSIONS,
        ],
    ).fetchall()

    clause, params = where("o", "created_at")
    # Changes per file, counted in SQL (over the files arrays' elements): one row per file.
    files = db.dialect.json_array_values("o.files", "f")
    writes = db.execute(
        "SELECT f.value AS file, COUNT(*) AS n, p.key AS project_key, p.name AS project_name "
        f"FROM observations o JOIN projects p ON p.id = o.project_id, {files} "
        f"WHERE o.type = 'file_write' AND {clause} AND {db.dialect.json_valid('o.files')} "
        "GROUP BY o.project_id, f.value, p.key, p.name ORDER BY n DESC, f.value LIMIT ?",
        [*params, MAX_FILE_ROWS],
    ).fetchall()
    types = db.execute(
        f"SELECT o.type, COUNT(*) FROM observations o WHERE {clause} GROUP BY o.type", params
    ).fetchall()
    clause, params = where("pr", "created_at")
    prompt_count = db.execute(f"SELECT COUNT(*) FROM prompts pr WHERE {clause}", params).fetchone()[
        0
    ]

    clause, params = where("su", "updated_at")
    learned = db.execute(
        f"SELECT su.session_id, su.learned, su.updated_at FROM summaries su WHERE {clause} "
        "ORDER BY su.updated_at, su.id",
        params,
    ).fetchall()
    clause, params = where("m", "created_at")
    memories = db.execute(
        "SELECT m.id, m.kind, m.content, m.importance, m.created_at, m.superseded_by, "
        f"m.archived_at FROM memories m WHERE {clause} "
        "AND m.kind IN ('decision', 'fact', 'lesson') ORDER BY m.created_at, m.id LIMIT ?",
        [*params, MAX_MEMORIES],
    ).fetchall()
    return {
        "sessions": [{**dict(r), "next_steps": split_lines(r["next_steps"])} for r in sessions],
        "file_changes": [
            {
                "file": str(r["file"]),
                "changes": int(r["n"]),
                "project_key": r["project_key"],
                "project_name": r["project_name"],
            }
            for r in writes
        ],
        "observation_types": {str(r[0]): int(r[1]) for r in types},
        "prompt_count": int(prompt_count),
        "learned": [
            {
                "session_id": r["session_id"],
                "items": split_lines(r["learned"]),
                "at": r["updated_at"],
            }
            for r in learned
        ],
        "memories": [dict(r) for r in memories],
    }


def resolve_project(conn: AnyDb, text: str) -> list[Row]:
    """Projects matching `text`: its key exactly, else its display name (may be several)."""
    db = as_db(conn)
    rows = db.execute("SELECT id, key, name FROM projects WHERE key = ?", (text,)).fetchall()
    if rows:
        return rows
    stripped = text.rstrip("/")
    rows = db.execute(
        "SELECT id, key, name FROM projects WHERE key = ? OR name = ? ORDER BY id",
        (stripped, stripped),
    ).fetchall()
    return rows
