"""Search's vector half in the database (PostgreSQL with pgvector): the items whose context
vectors are closest to a query, found through the HNSW index of `context_embedding`
(pg/vectors.py), and those vectors read back for the few hits that need them.

The same candidates as the worker's in-memory index (retrieval/vectors.py): one model's
vectors, of the query's project and the global items (every project's when none is named),
optionally of some kinds, best `limit` by cosine. Which of them are live (archived, superseded,
expired, a teammate's private item) is decided afterwards, on the loaded rows, as for the
in-memory index's hits (retrieval/search.py).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from worker.store.db import AnyDb, as_db
from worker.store.pg import vectors as pg_vectors

Ref = tuple[str, int]
# pgvector's default (40) is fewer than search asks for: the scan keeps as many candidates as
# rows wanted, so the best `limit` are found as well as the first 40 would be (higher recall
# for a few milliseconds more at 1M rows, bench/search_backends.py).
MIN_EF_SEARCH = 40
MAX_EF_SEARCH = 1000  # pgvector's upper bound


def nearest(
    conn: AnyDb,
    model: str,
    query: npt.NDArray[np.float32],
    *,
    project_id: int | None,
    kinds: list[str] | None,
    limit: int,
) -> list[tuple[Ref, float]]:
    """(item, cosine) of the `limit` items closest to `query` (L2-normalised), closest first."""
    db = as_db(conn)
    dim = len(query)
    if limit <= 0 or dim == 0:
        return []
    ef = min(MAX_EF_SEARCH, max(MIN_EF_SEARCH, int(limit)))
    db.execute(f"SET LOCAL hnsw.ef_search = {ef}")
    # The expression and predicate of the partial HNSW index, spelled as it is, so the planner
    # can use it (the dimension a literal: a parameter would not prove `dim = 384`).
    distance = f"(context_embedding::vector({dim})) <=> ?::vector({dim})"
    where = [f"dim = {dim}", "context_embedding IS NOT NULL", "model = ?"]
    target = pg_vectors.literal(query.tolist())
    args: list[object] = [target, model]
    if project_id is not None:
        where.append("(project_id = ? OR project_id IS NULL)")
        args.append(project_id)
    if kinds:
        where.append(db.dialect.in_ids("item_kind"))
        args.append(db.dialect.ids_parameter(kinds))
    rows = db.execute(
        f"SELECT item_kind, item_id, {distance} AS distance FROM embeddings "
        f"WHERE {' AND '.join(where)} ORDER BY {distance} LIMIT ?",
        (*args, target, limit),
    ).fetchall()
    found = [((str(r[0]), int(r[1])), 1.0 - float(r[2])) for r in rows]
    # Equal cosines by ref, as the worker's in-memory index orders them (retrieval/vectors.py).
    found.sort(key=lambda pair: (-pair[1], pair[0]))
    return found


def context_vectors(conn: AnyDb, model: str, refs: list[Ref]) -> dict[Ref, npt.NDArray[np.float32]]:
    """The stored context vectors of these items (those that have one of `model`)."""
    db = as_db(conn)
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        by_kind.setdefault(kind, []).append(item_id)
    out: dict[Ref, npt.NDArray[np.float32]] = {}
    for kind, ids in by_kind.items():
        # pgvector's binary form (vector_send: int16 dim, int16 unused, big-endian float32s)
        # as bytea: `::real[]` made psycopg parse every float from text (30 vectors of 384
        # dims: 8.2 ms, this 0.7 ms; bench/search_backends.py's dedupe page).
        for row in db.execute(
            "SELECT item_id, vector_send(context_embedding) FROM embeddings WHERE item_kind = ? "
            f"AND model = ? AND context_embedding IS NOT NULL AND {db.dialect.in_ids('item_id')}",
            (kind, model, db.dialect.ids_parameter(sorted(set(ids)))),
        ):
            sent = bytes(row[1])
            out[(kind, int(row[0]))] = np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32)
    return out


def count(conn: AnyDb, model: str) -> int:
    """How many items have a context vector of `model` (status's indexed vectors)."""
    row = (
        as_db(conn)
        .execute(
            "SELECT COUNT(*) FROM embeddings WHERE model = ? AND context_embedding IS NOT NULL",
            (model,),
        )
        .fetchone()
    )
    return int(row[0]) if row is not None else 0
