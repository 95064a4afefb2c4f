"""Lifecycle queries: the columns decay needs, archive/restore in bulk, forget with every trace."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from worker.store.db import AnyDb, as_db
from worker.store.rows import placeholders

TABLES = {"memory": "memories", "observation": "observations"}


def live_memory_count(conn: sqlite3.Connection, project_id: int | None = None) -> int:
    """Live memories of one project, or of every scope when `project_id` is None."""
    where = "" if project_id is None else "AND project_id = ?"
    args: tuple[Any, ...] = () if project_id is None else (project_id,)
    row = conn.execute(
        f"SELECT COUNT(*) FROM memories WHERE archived_at IS NULL {where}", args
    ).fetchone()
    return int(row[0])


def expired_memories(
    conn: sqlite3.Connection, now_ms: int, project_id: int | None = None
) -> list[int]:
    """Live, unpinned memories whose `expires_at` has passed (pinned ones stay until unpinned)."""
    where = "" if project_id is None else "AND project_id = ?"
    args: tuple[Any, ...] = (now_ms,) if project_id is None else (now_ms, project_id)
    rows = conn.execute(
        "SELECT id FROM memories WHERE archived_at IS NULL AND pinned = 0 "
        f"AND expires_at IS NOT NULL AND expires_at <= ? {where} ORDER BY id",
        args,
    ).fetchall()
    return [int(r[0]) for r in rows]


def observation_decay_rows(conn: sqlite3.Connection, project_id: int) -> list[tuple[Any, ...]]:
    """(id, type, importance, retrieval_count, anchor_ms) of one project's live observations."""
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples: a cap check reads a whole project
    rows: list[tuple[Any, ...]] = cur.execute(
        "SELECT id, type, importance, retrieval_count, "
        "MAX(created_at, COALESCE(last_retrieved_at, 0), COALESCE(kept_at, 0)) "
        "FROM observations WHERE archived_at IS NULL AND project_id = ?",
        (project_id,),
    ).fetchall()
    return rows


def active_days(
    conn: sqlite3.Connection, scopes: list[int | None] | None = None
) -> dict[int | None, list[int]]:
    """Each scope's active days (UTC day numbers, ascending), the clock its items age by.

    A project's days are those it was worked on (migration 12); the global scope (None) counts
    every day any project was worked on. `scopes` None: every project and the global scope.
    """
    cur = conn.cursor()
    cur.row_factory = None
    if scopes is None:
        rows = cur.execute("SELECT project_id, day FROM project_activity ORDER BY day").fetchall()
    else:
        pids = sorted({p for p in scopes if p is not None})
        rows = cur.execute(
            "SELECT project_id, day FROM project_activity "
            "WHERE project_id IN (SELECT value FROM json_each(?)) ORDER BY day",
            (json.dumps(pids),),
        ).fetchall()
    out: dict[int | None, list[int]] = {p: [] for p in scopes or ()}
    for pid, day in rows:
        out.setdefault(int(pid), []).append(int(day))
    if scopes is None or None in scopes:
        if scopes is not None:
            rows = cur.execute("SELECT project_id, day FROM project_activity").fetchall()
        out[None] = sorted({int(r[1]) for r in rows})
    return out


def live_observation_counts(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """(project_id, live observations) per project."""
    rows = conn.execute(
        "SELECT project_id, COUNT(*) FROM observations WHERE archived_at IS NULL GROUP BY project_id"
    ).fetchall()
    return [(int(r[0]), int(r[1])) for r in rows]


def archive(conn: sqlite3.Connection, kind: str, ids: list[int], at_ms: int, reason: str) -> int:
    """Archive live items (one statement for any number of ids); returns how many changed."""
    if not ids:
        return 0
    cur = conn.execute(
        f"UPDATE {TABLES[kind]} SET archived_at = ?, archive_reason = ? "
        "WHERE archived_at IS NULL AND id IN (SELECT value FROM json_each(?))",
        (at_ms, reason, json.dumps(ids)),
    )
    return cur.rowcount


def restore_observation(conn: sqlite3.Connection, observation_id: int, at_ms: int) -> bool:
    """Un-archive; the decay clock restarts now so the next pass does not archive it again."""
    cur = conn.execute(
        "UPDATE observations SET archived_at = NULL, archive_reason = NULL, kept_at = ? "
        "WHERE id = ?",
        (at_ms, observation_id),
    )
    return cur.rowcount > 0


def _has_table(conn: AnyDb, name: str) -> bool:
    db = as_db(conn)
    return db.execute(db.dialect.table_exists(), (name,)).fetchone() is not None


def forget_traces(conn: AnyDb, kind: str, ids: list[int]) -> None:
    """Remove what other tables hold about deleted items: vectors and injection records."""
    if not ids:
        return
    db = as_db(conn)
    marks = placeholders(len(ids))
    db.execute(f"DELETE FROM embeddings WHERE item_kind = ? AND item_id IN ({marks})", (kind, *ids))
    if _has_table(db, "context_injections"):  # not on PostgreSQL yet (README, Team memory)
        db.execute(
            f"DELETE FROM context_injections WHERE item_kind = ? AND item_id IN ({marks})",
            (kind, *ids),
        )


def delete_observation(conn: sqlite3.Connection, observation_id: int) -> bool:
    """Forget an observation for good: row, keyword indexes (triggers), vector, injections."""
    cur = conn.execute("DELETE FROM observations WHERE id = ?", (observation_id,))
    if cur.rowcount == 0:
        return False
    forget_traces(conn, "observation", [observation_id])
    return True


def memory_vectors(
    conn: sqlite3.Connection, project_id: int | None
) -> tuple[list[int], list[bytes], str | None]:
    """Stored vectors of the live memories of one scope, for the model most of them use."""
    cur = conn.cursor()
    cur.row_factory = None
    model_row = cur.execute(
        "SELECT e.model FROM embeddings e JOIN memories m ON m.id = e.item_id "
        "WHERE e.item_kind = 'memory' AND m.project_id IS ? AND m.archived_at IS NULL "
        "GROUP BY e.model ORDER BY COUNT(*) DESC LIMIT 1",
        (project_id,),
    ).fetchone()
    if model_row is None:
        return [], [], None
    model = str(model_row[0])
    rows = cur.execute(
        "SELECT e.item_id, e.vector FROM embeddings e JOIN memories m ON m.id = e.item_id "
        "WHERE e.item_kind = 'memory' AND e.model = ? AND m.project_id IS ? "
        "AND m.archived_at IS NULL AND m.superseded_by IS NULL ORDER BY e.item_id",
        (model, project_id),
    ).fetchall()
    return [int(r[0]) for r in rows], [bytes(r[1]) for r in rows], model


def memory_scopes(conn: sqlite3.Connection) -> list[int | None]:
    """Every scope holding live memories: project ids, and None for the global scope."""
    rows = conn.execute(
        "SELECT DISTINCT project_id FROM memories WHERE archived_at IS NULL"
    ).fetchall()
    return [r[0] for r in rows]
