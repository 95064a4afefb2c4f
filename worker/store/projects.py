"""Projects: a string key (a repository root path or any name) with a display name."""

from __future__ import annotations

from typing import Any

from worker.clock import now_ms, to_iso
from worker.store.db import AnyDb, as_db
from worker.store.rows import ms


def display_name(key: str) -> str:
    stripped = key.rstrip("/\\")
    if "/" in stripped or "\\" in stripped:
        return stripped.replace("\\", "/").rsplit("/", 1)[-1] or key
    return key


def ensure(conn: AnyDb, key: str) -> int:
    """The project id for `key`, creating the project if it is new."""
    db = as_db(conn)
    row = db.execute("SELECT id FROM projects WHERE key = ?", (key,)).fetchone()
    if row is not None:
        return int(row[0])
    return db.insert(
        "INSERT INTO projects(key, name, created_at) VALUES (?, ?, ?)",
        (key, display_name(key), now_ms()),
    )


def keys_named(conn: AnyDb, name: str) -> list[str]:
    """The keys of the projects whose display name is `name` (a checkout's folder name: "demo-repo"
    for /home/me/src/demo-repo), oldest first."""
    rows = (
        as_db(conn)
        .execute("SELECT key FROM projects WHERE name = ? ORDER BY id", (name,))
        .fetchall()
    )
    return [str(r[0]) for r in rows]


def find(conn: AnyDb, key: str) -> int | None:
    row = as_db(conn).execute("SELECT id FROM projects WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row is not None else None


def list_all(conn: AnyDb) -> list[dict[str, Any]]:
    rows = (
        as_db(conn)
        .execute(
            """SELECT p.id, p.key, p.name, p.created_at,
                  (SELECT COUNT(*) FROM sessions s WHERE s.project_id = p.id) AS sessions,
                  (SELECT COUNT(*) FROM observations o WHERE o.project_id = p.id) AS observations,
                  (SELECT COUNT(*) FROM memories m WHERE m.project_id = p.id) AS memories,
                  (SELECT MAX(o.created_at) FROM observations o WHERE o.project_id = p.id) AS last
           FROM projects p ORDER BY p.name, p.id"""
        )
        .fetchall()
    )
    return [
        {
            "id": r["id"],
            "key": r["key"],
            "name": r["name"],
            "created_at": to_iso(ms(r["created_at"], "projects.created_at")),
            "sessions": r["sessions"],
            "observations": r["observations"],
            "memories": r["memories"],
            "last_activity_at": to_iso(ms(r["last"], "observations.created_at")),
        }
        for r in rows
    ]
