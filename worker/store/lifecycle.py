"""Lifecycle queries: the columns decay needs, archive/restore in bulk, forget with every trace."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from worker.store.rows import placeholders

TABLES = {"memory": "memories", "observation": "observations"}


def memory_decay_rows(
    conn: sqlite3.Connection, project_id: int | None = None, *, all_projects: bool = True
) -> list[tuple[Any, ...]]:
    """(id, importance, reinforcements, pinned, anchor_ms, expires_at) of live memories."""
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples: a decay pass reads 100k rows
    where = "" if all_projects else "AND project_id IS ?"
    args: tuple[Any, ...] = () if all_projects else (project_id,)
    rows: list[tuple[Any, ...]] = cur.execute(
        "SELECT id, importance, retrieval_count + hit_count, pinned, "
        "MAX(updated_at, COALESCE(last_retrieved_at, 0)), expires_at "
        f"FROM memories WHERE archived_at IS NULL {where}",
        args,
    ).fetchall()
    return rows


def observation_decay_rows(
    conn: sqlite3.Connection, project_id: int | None = None
) -> list[tuple[Any, ...]]:
    """(id, type, importance, retrieval_count, anchor_ms) of live observations."""
    cur = conn.cursor()
    cur.row_factory = None
    where = "" if project_id is None else "AND project_id = ?"
    args: tuple[Any, ...] = () if project_id is None else (project_id,)
    rows: list[tuple[Any, ...]] = cur.execute(
        "SELECT id, type, importance, retrieval_count, "
        "MAX(created_at, COALESCE(last_retrieved_at, 0), COALESCE(kept_at, 0)) "
        f"FROM observations WHERE archived_at IS NULL {where}",
        args,
    ).fetchall()
    return rows


def live_observation_counts(
    conn: sqlite3.Connection, chatter_types: tuple[str, ...]
) -> list[tuple[int, int, int]]:
    """(project_id, live observations, live chatter observations) per project."""
    chatter = f"type IN ({placeholders(len(chatter_types))})" if chatter_types else "0"
    cur = conn.cursor()
    cur.row_factory = None
    rows: list[tuple[int, int, int]] = cur.execute(
        f"SELECT project_id, COUNT(*), COALESCE(SUM({chatter}), 0) FROM observations "
        "WHERE archived_at IS NULL GROUP BY project_id",
        chatter_types,
    ).fetchall()
    return rows


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


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def forget_traces(conn: sqlite3.Connection, kind: str, ids: list[int]) -> None:
    """Remove what other tables hold about deleted items: vectors and injection records."""
    if not ids:
        return
    marks = placeholders(len(ids))
    conn.execute(
        f"DELETE FROM embeddings WHERE item_kind = ? AND item_id IN ({marks})", (kind, *ids)
    )
    if _has_table(conn, "context_injections"):
        conn.execute(
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
