"""Memory vectors on either database: stored as little-endian float32 blobs in `embeddings`
(store/vectors.py's format); a memory's nearest neighbours found by the database where it can
(pgvector's HNSW index, cosine), else compared here with numpy over the stored blobs (SQLite,
and a PostgreSQL server without pgvector). Both give the same cosines, up to float rounding."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from worker.store import vectors
from worker.store.db import AnyDb, Db, as_db, same_value
from worker.store.pg import vectors as pg_vectors
from worker.store.vectors import to_blob

# Live, latest memories of one scope with a vector of one model and length (one parameter each
# for the model and dim, then the scope's).
_CANDIDATES = (
    "FROM embeddings e JOIN memories m ON m.id = e.item_id "
    "WHERE e.item_kind = 'memory' AND e.model = ? AND e.dim = ? AND {scope} "
    "AND m.archived_at IS NULL AND m.superseded_by IS NULL"
)


def save(
    conn: AnyDb,
    memory_id: int,
    project_id: int | None,
    model: str,
    vector: npt.NDArray[np.float32],
) -> None:
    """Store (or replace) one memory's vector."""
    values = np.asarray(vector, dtype=np.float32).ravel()
    vectors.save(conn, model, len(values), [(("memory", memory_id), project_id, to_blob(values))])


def nearest(
    conn: AnyDb,
    model: str,
    vector: npt.NDArray[np.float32],
    project_id: int | None,
    *,
    limit: int = 10,
) -> list[tuple[int, float]]:
    """(memory id, cosine) of the live memories of one scope closest to `vector`, closest
    first (equal cosines: newest first here, in index order on pgvector)."""
    db = as_db(conn)
    query = np.asarray(vector, dtype=np.float32).ravel()
    if limit <= 0 or not np.any(query):
        return []
    if db.native_vectors:
        return _nearest_in_database(db, model, query, project_id, limit)
    return _nearest_here(db, model, query, project_id, limit)


def _nearest_in_database(
    db: Db, model: str, query: npt.NDArray[np.float32], project_id: int | None, limit: int
) -> list[tuple[int, float]]:
    dim = len(query)
    scope, scope_args = same_value("e.project_id", project_id)
    # The expression of the partial HNSW index (pg/vectors.py), so the planner can use it.
    distance = f"(e.embedding::vector({dim})) <=> ?::vector({dim})"
    target = pg_vectors.literal(query.tolist())
    rows = db.execute(
        f"SELECT e.item_id, {distance} AS distance "
        + _CANDIDATES.format(scope=scope)
        # No tie-break column: an index scan yields distance order only.
        + f" AND e.embedding IS NOT NULL ORDER BY {distance} LIMIT ?",
        (target, model, dim, *scope_args, target, limit),
    ).fetchall()
    return [(int(r[0]), 1.0 - float(r[1])) for r in rows]


def _nearest_here(
    db: Db, model: str, query: npt.NDArray[np.float32], project_id: int | None, limit: int
) -> list[tuple[int, float]]:
    dim = len(query)
    scope, scope_args = same_value("e.project_id", project_id)
    rows = db.execute(
        "SELECT e.item_id, e.vector " + _CANDIDATES.format(scope=scope),
        (model, dim, *scope_args),
    ).fetchall()
    if not rows:
        return []
    ids = np.array([int(r[0]) for r in rows], dtype=np.int64)
    matrix = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype="<f4").reshape(-1, dim)
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query))
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines = np.where(norms > 0, (matrix @ query) / norms, 0.0)
    order = np.lexsort((-ids, -cosines))[:limit]
    return [(int(ids[i]), float(cosines[i])) for i in order]
