"""Rows behind the project profile and the cache of its static part (in the kv table).

Ported to the store's database edge (store/db.py): every function here runs on SQLite and on
PostgreSQL alike, its SQL written once.
"""

from __future__ import annotations

import json
from typing import Any

from worker.clock import now_ms
from worker.store import kv, privacy
from worker.store.db import AnyDb, as_db
from worker.store.observations import COLUMNS as OBSERVATION_COLUMNS
from worker.store.observations import FROM as OBSERVATION_FROM
from worker.store.observations import to_dict as observation_dict
from worker.store.rows import load_json, ms
from worker.store.sessions import get as get_session

# The static profile reads this many recent observations (bounded cost on huge projects).
PROFILE_OBSERVATIONS = 3000
PROFILE_PROMPTS = 20
FLIGHT_OBSERVATIONS = 200
MIN_IMPORTANCE = 4


def _key(project_id: int, reader: str | None = None) -> str:
    """The cache key of a project's static part: per reader on a team database (built from the
    observations that reader may see), one for the project on SQLite (reader None)."""
    return f"profile:{project_id}" if reader is None else f"profile:{project_id}:{reader}"


def project_row(conn: AnyDb, project_id: int) -> dict[str, Any] | None:
    row = (
        as_db(conn)
        .execute("SELECT id, key, name FROM projects WHERE id = ?", (project_id,))
        .fetchone()
    )
    return dict(row) if row is not None else None


def marks(conn: AnyDb, project_id: int) -> dict[str, str]:
    """What the static part depends on: the project's observations and its memories."""
    obs = (
        as_db(conn)
        .execute("SELECT MAX(created_at) FROM observations WHERE project_id = ?", (project_id,))
        .fetchone()[0]
    )
    memory = (
        as_db(conn)
        .execute(
            "SELECT MAX(updated_at), COUNT(*), COUNT(archived_at), COUNT(superseded_by), "
            "CAST(SUM(importance) AS BIGINT), CAST(SUM(pinned) AS BIGINT) FROM memories "
            "WHERE project_id = ?",
            (project_id,),
        )
        .fetchone()
    )
    return {"obs_mark": json.dumps(obs), "memory_mark": json.dumps(list(memory))}


def cached_static(
    conn: AnyDb,
    project_id: int,
    current: dict[str, str],
    *,
    ttl_seconds: float,
    min_refresh_seconds: float,
    reader: str | None = None,
) -> dict[str, Any] | None:
    """The cache entry (`reader`'s) if still valid for `current` marks, else None."""
    entry = kv.get_json(conn, _key(project_id, reader))
    if not isinstance(entry, dict) or not isinstance(entry.get("static"), dict):
        return None
    age_ms = now_ms() - int(entry.get("at", 0))
    if entry.get("memory_mark") != current["memory_mark"] or age_ms > ttl_seconds * 1000:
        return None
    if entry.get("obs_mark") != current["obs_mark"] and age_ms > min_refresh_seconds * 1000:
        return None
    return entry


def store_static(conn: AnyDb, project_id: int, entry: dict[str, Any]) -> None:
    """Cache `entry` under the key of the reader it was built for (its "reader")."""
    kv.put_json(conn, _key(project_id, entry.get("reader")), entry)


def invalidate(conn: AnyDb, project_id: int) -> None:
    """Drop the project's cached static parts (every reader's)."""
    base = _key(project_id)
    as_db(conn).execute("DELETE FROM kv WHERE key = ? OR key LIKE ?", (base, base + ":%"))


def static_rows(
    conn: AnyDb, project_id: int, *, visible_to: str | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(recent file/research/command observations oldest first, live important memories): the
    observations `visible_to` may see (store/privacy.py; None: all), so a teammate's private
    command or file never reaches a profile."""
    seen, seen_args = _visible("observations", visible_to)
    # Lean rows: bodies and meta only for commands (exit codes), files only for the others.
    observations = [
        {
            "type": r["type"],
            "title": r["title"],
            "body": r["body"],
            "files": load_json(r["files"], [], field="observations.files"),
            "meta": load_json(r["meta"], field="observations.meta", kind=dict),
            "created_at": ms(r["created_at"], "observations.created_at") or 0,
        }
        for r in as_db(conn).execute(
            "SELECT * FROM (SELECT id, type, title, "
            "CASE WHEN type = 'command' THEN body ELSE '' END AS body, "
            "CASE WHEN type = 'command' THEN '[]' ELSE files END AS files, "
            "CASE WHEN type = 'command' THEN meta END AS meta, created_at FROM observations "
            f"WHERE project_id = ? AND type IN ('file_write', 'research', 'command'){seen} "
            "ORDER BY created_at DESC, id DESC LIMIT ?) recent ORDER BY created_at, id",
            (project_id, *seen_args, PROFILE_OBSERVATIONS),
        )
    ]
    memories = (
        as_db(conn)
        .execute(
            "SELECT id, kind, content, importance, pinned, updated_at AS updated_ms FROM memories "
            "WHERE project_id = ? AND kind IN ('decision', 'preference') AND archived_at IS NULL "
            "AND superseded_by IS NULL AND (importance >= ? OR pinned = 1) "
            "AND (expires_at IS NULL OR expires_at > ?)",
            (project_id, MIN_IMPORTANCE, now_ms()),
        )
        .fetchall()
    )
    return observations, [
        {**dict(r), "updated_ms": ms(r["updated_ms"], "memories.updated_at") or 0} for r in memories
    ]


def _latest_session_id(conn: AnyDb, project_id: int, visible_to: str | None) -> str | None:
    """The session with the project's most recent prompt or observation the reader may see
    (else the newest)."""
    o_seen, o_args = _visible("o", visible_to)
    r_seen, r_args = _visible("r", visible_to)
    row = (
        as_db(conn)
        .execute(
            "SELECT session_id FROM ("
            " SELECT * FROM (SELECT o.session_id, o.created_at FROM observations o"
            f"  WHERE o.project_id = ? AND o.session_id IS NOT NULL{o_seen}"
            "  ORDER BY o.created_at DESC LIMIT 1) o"
            " UNION ALL"
            " SELECT * FROM (SELECT r.session_id, r.created_at FROM prompts r"
            f"  WHERE r.project_id = ?{r_seen} ORDER BY r.created_at DESC LIMIT 1) p"
            ") latest ORDER BY created_at DESC LIMIT 1",
            (project_id, *o_args, project_id, *r_args),
        )
        .fetchone()
    )
    if row is not None:
        return str(row[0])
    row = (
        as_db(conn)
        .execute(
            "SELECT id FROM sessions WHERE project_id = ? ORDER BY started_at DESC LIMIT 1",
            (project_id,),
        )
        .fetchone()
    )
    return None if row is None else str(row[0])


def _visible(alias: str, visible_to: str | None) -> tuple[str, tuple[object, ...]]:
    """' AND <the privacy term>' for a named reader (store/privacy.py), else nothing."""
    if visible_to is None:
        return "", ()
    term, args = privacy.shared_or_by(alias, visible_to)
    return f" AND {term}", args


def dynamic_rows(
    conn: AnyDb, project_id: int, *, visible_to: str | None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[dict[str, Any]]]:
    """(recent prompts oldest first, the latest active session, its file writes oldest first),
    of the prompts and observations `visible_to` may see (store/privacy.py; None: all)."""
    r_seen, r_args = _visible("r", visible_to)
    prompts = (
        as_db(conn)
        .execute(
            "SELECT * FROM (SELECT r.id, r.session_id, r.number, r.text, r.created_at "
            f"FROM prompts r WHERE r.project_id = ?{r_seen} "
            "ORDER BY r.created_at DESC, r.id DESC LIMIT ?) recent ORDER BY created_at, id",
            (project_id, *r_args, PROFILE_PROMPTS),
        )
        .fetchall()
    )
    session_id = _latest_session_id(conn, project_id, visible_to)
    session = get_session(conn, session_id) if session_id else None
    o_seen, o_args = _visible("o", visible_to)
    flight = (
        as_db(conn)
        .execute(
            f"SELECT * FROM (SELECT {OBSERVATION_COLUMNS} {OBSERVATION_FROM} "
            f"WHERE o.session_id = ? AND o.type = 'file_write'{o_seen} "
            "ORDER BY o.created_at DESC, o.id DESC LIMIT ?) recent ORDER BY created_at, id",
            (session_id, *o_args, FLIGHT_OBSERVATIONS),
        )
        .fetchall()
        if session_id
        else []
    )
    return [dict(r) for r in prompts], session, [observation_dict(r) for r in flight]
