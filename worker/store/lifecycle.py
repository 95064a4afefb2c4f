"""Lifecycle queries: the columns decay needs, archive/restore in bulk, forget with every trace.

Ported to the store's database edge (store/db.py): SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from typing import Any

from worker.store.db import AnyDb, as_db, same_value
from worker.store.rows import placeholders

TABLES = {"memory": "memories", "observation": "observations"}


def live_memory_count(conn: AnyDb, project_id: int | None = None) -> int:
    """Live memories of one project, or of every scope when `project_id` is None."""
    where = "" if project_id is None else "AND project_id = ?"
    args: tuple[Any, ...] = () if project_id is None else (project_id,)
    row = (
        as_db(conn)
        .execute(f"SELECT COUNT(*) FROM memories WHERE archived_at IS NULL {where}", args)
        .fetchone()
    )
    return int(row[0])


def expired_memories(conn: AnyDb, now_ms: int, project_id: int | None = None) -> list[int]:
    """Live, unpinned memories whose `expires_at` has passed (pinned ones stay until unpinned)."""
    where = "" if project_id is None else "AND project_id = ?"
    args: tuple[Any, ...] = (now_ms,) if project_id is None else (now_ms, project_id)
    rows = (
        as_db(conn)
        .execute(
            "SELECT id FROM memories WHERE archived_at IS NULL AND pinned = 0 "
            f"AND expires_at IS NOT NULL AND expires_at <= ? {where} ORDER BY id",
            args,
        )
        .fetchall()
    )
    return [int(r[0]) for r in rows]


def observation_decay_rows(conn: AnyDb, project_id: int) -> list[tuple[Any, ...]]:
    """(id, type, importance, retrieval_count, anchor_ms) of one project's live observations."""
    db = as_db(conn)
    anchor = db.dialect.greatest(
        "created_at", "COALESCE(last_retrieved_at, 0)", "COALESCE(kept_at, 0)"
    )
    return db.tuples(  # plain tuples: a cap check reads a whole project
        f"SELECT id, type, importance, retrieval_count, {anchor} "
        "FROM observations WHERE archived_at IS NULL AND project_id = ?",
        (project_id,),
    )


def active_days(conn: AnyDb, scopes: list[int | None] | None = None) -> dict[int | None, list[int]]:
    """Each scope's active days (UTC day numbers, ascending), the clock its items age by.

    A project's days are those it was worked on (migration 12); the global scope (None) counts
    every day any project was worked on. `scopes` None: every project and the global scope.
    """
    db = as_db(conn)
    if scopes is None:
        rows = db.tuples("SELECT project_id, day FROM project_activity ORDER BY day")
    else:
        pids = sorted({p for p in scopes if p is not None})
        rows = db.tuples(
            "SELECT project_id, day FROM project_activity "
            f"WHERE {db.dialect.in_ids('project_id')} ORDER BY day",
            (db.dialect.ids_parameter(pids),),
        )
    out: dict[int | None, list[int]] = {p: [] for p in scopes or ()}
    for pid, day in rows:
        out.setdefault(int(pid), []).append(int(day))
    if scopes is None or None in scopes:
        if scopes is not None:
            rows = db.tuples("SELECT project_id, day FROM project_activity")
        out[None] = sorted({int(r[1]) for r in rows})
    return out


def live_observation_counts(conn: AnyDb) -> list[tuple[int, int]]:
    """(project_id, live observations) per project."""
    rows = (
        as_db(conn)
        .execute(
            "SELECT project_id, COUNT(*) FROM observations WHERE archived_at IS NULL GROUP BY project_id"
        )
        .fetchall()
    )
    return [(int(r[0]), int(r[1])) for r in rows]


def archive(conn: AnyDb, kind: str, ids: list[int], at_ms: int, reason: str) -> int:
    """Archive live items (one statement for any number of ids); returns how many changed."""
    if not ids:
        return 0
    db = as_db(conn)
    cur = db.execute(
        f"UPDATE {TABLES[kind]} SET archived_at = ?, archive_reason = ? "
        f"WHERE archived_at IS NULL AND {db.dialect.in_ids('id')}",
        (at_ms, reason, db.dialect.ids_parameter(ids)),
    )
    return cur.rowcount


def restore_observation(conn: AnyDb, observation_id: int, at_ms: int) -> bool:
    """Un-archive; the decay clock restarts now so the next pass does not archive it again."""
    cur = as_db(conn).execute(
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
    if _has_table(db, "context_injections"):  # not on PostgreSQL yet (docs/team.md)
        db.execute(
            f"DELETE FROM context_injections WHERE item_kind = ? AND item_id IN ({marks})",
            (kind, *ids),
        )


def delete_observation(conn: AnyDb, observation_id: int) -> bool:
    """Forget an observation for good: row, keyword indexes (triggers), vector, injections."""
    cur = as_db(conn).execute("DELETE FROM observations WHERE id = ?", (observation_id,))
    if cur.rowcount == 0:
        return False
    forget_traces(conn, "observation", [observation_id])
    return True


def memory_vectors(
    conn: AnyDb, project_id: int | None
) -> tuple[list[int], list[bytes], str | None]:
    """Stored vectors of the live memories of one scope, for the model most of them use."""
    db = as_db(conn)
    scope, args = same_value("m.project_id", project_id)
    model_row = db.execute(
        "SELECT e.model FROM embeddings e JOIN memories m ON m.id = e.item_id "
        f"WHERE e.item_kind = 'memory' AND {scope} AND m.archived_at IS NULL "
        "GROUP BY e.model ORDER BY COUNT(*) DESC, e.model LIMIT 1",
        args,
    ).fetchone()
    if model_row is None:
        return [], [], None
    model = str(model_row[0])
    rows = db.tuples(
        "SELECT e.item_id, e.vector FROM embeddings e JOIN memories m ON m.id = e.item_id "
        f"WHERE e.item_kind = 'memory' AND e.model = ? AND {scope} "
        "AND m.archived_at IS NULL AND m.superseded_by IS NULL ORDER BY e.item_id",
        (model, *args),
    )
    return [int(r[0]) for r in rows], [bytes(r[1]) for r in rows], model


def memory_scopes(conn: AnyDb) -> list[int | None]:
    """Every scope holding live memories: project ids, and None for the global scope."""
    rows = (
        as_db(conn)
        .execute("SELECT DISTINCT project_id FROM memories WHERE archived_at IS NULL")
        .fetchall()
    )
    return [r[0] for r in rows]
