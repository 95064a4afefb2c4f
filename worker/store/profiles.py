"""Rows behind the project profile, its data mark and its cache (in the kv table)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from worker.clock import now_ms
from worker.store.observations import COLUMNS as OBSERVATION_COLUMNS
from worker.store.observations import FROM as OBSERVATION_FROM
from worker.store.observations import to_dict as observation_dict
from worker.store.sessions import get as get_session

# The static profile reads this many recent observations (bounded cost on huge projects).
PROFILE_OBSERVATIONS = 3000
PROFILE_PROMPTS = 20
MIN_IMPORTANCE = 4


def _key(project_id: int) -> str:
    return f"profile:{project_id}"


def data_mark(conn: sqlite3.Connection, project_id: int) -> str:
    """Changes whenever an observation, prompt, session or memory of the project changes."""
    obs = conn.execute(
        "SELECT MAX(created_at) FROM observations WHERE project_id = ?", (project_id,)
    ).fetchone()[0]
    prompt = conn.execute(
        "SELECT MAX(created_at) FROM prompts WHERE project_id = ?", (project_id,)
    ).fetchone()[0]
    session = conn.execute(
        "SELECT MAX(started_at), COUNT(*) FROM sessions WHERE project_id = ?", (project_id,)
    ).fetchone()
    memory = conn.execute(
        "SELECT MAX(updated_at), COUNT(*), COUNT(archived_at), COUNT(superseded_by) "
        "FROM memories WHERE project_id = ?",
        (project_id,),
    ).fetchone()
    return json.dumps([obs, prompt, list(session), list(memory)])


def cached(
    conn: sqlite3.Connection, project_id: int, mark: str, ttl_seconds: float
) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM kv WHERE key = ?", (_key(project_id),)).fetchone()
    if row is None:
        return None
    try:
        entry = json.loads(row[0])
    except ValueError:
        return None
    if entry.get("mark") != mark or now_ms() - int(entry.get("at", 0)) > ttl_seconds * 1000:
        return None
    profile = entry.get("profile")
    return profile if isinstance(profile, dict) else None


def store_cache(
    conn: sqlite3.Connection, project_id: int, mark: str, profile: dict[str, Any]
) -> None:
    now = now_ms()
    value = json.dumps({"mark": mark, "at": now, "profile": profile}, ensure_ascii=False)
    conn.execute(
        "INSERT INTO kv(key, value, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (_key(project_id), value, now),
    )


def invalidate(conn: sqlite3.Connection, project_id: int) -> None:
    conn.execute("DELETE FROM kv WHERE key = ?", (_key(project_id),))


def _latest_session_id(conn: sqlite3.Connection, project_id: int) -> str | None:
    """The session with the project's most recent prompt or observation (else the newest)."""
    row = conn.execute(
        "SELECT session_id FROM ("
        " SELECT * FROM (SELECT session_id, created_at FROM observations"
        "  WHERE project_id = ? AND session_id IS NOT NULL ORDER BY created_at DESC LIMIT 1)"
        " UNION ALL"
        " SELECT * FROM (SELECT session_id, created_at FROM prompts"
        "  WHERE project_id = ? ORDER BY created_at DESC LIMIT 1)"
        ") ORDER BY created_at DESC LIMIT 1",
        (project_id, project_id),
    ).fetchone()
    if row is not None:
        return str(row[0])
    row = conn.execute(
        "SELECT id FROM sessions WHERE project_id = ? ORDER BY started_at DESC LIMIT 1",
        (project_id,),
    ).fetchone()
    return None if row is None else str(row[0])


def profile_rows(conn: sqlite3.Connection, project_id: int) -> dict[str, Any] | None:
    project = conn.execute(
        "SELECT id, key, name FROM projects WHERE id = ?", (project_id,)
    ).fetchone()
    if project is None:
        return None
    observations = conn.execute(
        f"SELECT * FROM (SELECT {OBSERVATION_COLUMNS} {OBSERVATION_FROM} WHERE o.project_id = ? "
        "AND o.type IN ('file_write', 'research', 'command') "
        "ORDER BY o.created_at DESC, o.id DESC LIMIT ?) ORDER BY created_at, id",
        (project_id, PROFILE_OBSERVATIONS),
    ).fetchall()
    prompts = conn.execute(
        "SELECT * FROM (SELECT id, session_id, number, text, created_at FROM prompts "
        "WHERE project_id = ? ORDER BY created_at DESC, id DESC LIMIT ?) ORDER BY created_at, id",
        (project_id, PROFILE_PROMPTS),
    ).fetchall()
    memories = conn.execute(
        "SELECT id, kind, content, importance, pinned, updated_at AS updated_ms FROM memories "
        "WHERE project_id = ? AND kind IN ('decision', 'preference') AND archived_at IS NULL "
        "AND superseded_by IS NULL AND (importance >= ? OR pinned = 1) "
        "AND (expires_at IS NULL OR expires_at > ?)",
        (project_id, MIN_IMPORTANCE, now_ms()),
    ).fetchall()
    session_id = _latest_session_id(conn, project_id)
    session = get_session(conn, session_id) if session_id else None
    flight_rows = (
        conn.execute(
            f"SELECT * FROM (SELECT {OBSERVATION_COLUMNS} {OBSERVATION_FROM} "
            "WHERE o.session_id = ? AND o.type = 'file_write' "
            "ORDER BY o.created_at DESC, o.id DESC LIMIT 200) ORDER BY created_at, id",
            (session_id,),
        ).fetchall()
        if session_id
        else []
    )
    return {
        "project": dict(project),
        "observations": [observation_dict(r) for r in observations],
        "prompts": [dict(r) for r in prompts],
        "memories": [dict(r) for r in memories],
        "latest_session": session,
        "latest_session_observations": [observation_dict(r) for r in flight_rows],
    }
