"""The embeddings table: vectors as little-endian float32 blobs tagged with the model id."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from worker.clock import now_ms
from worker.store.db import AnyDb, as_db
from worker.store.m002_retrieval import SOURCES
from worker.store.pg import vectors as pg_vectors

Ref = tuple[str, int]


def to_blob(vector: npt.NDArray[np.float32]) -> bytes:
    """Little-endian float32 bytes, as stored in the embeddings table."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def iter_vectors(
    conn: AnyDb, model: str, batch: int = 5000
) -> Iterator[tuple[Ref, int | None, bytes]]:
    """Every stored vector of `model`: ((kind, id), project_id, blob), in table order (no sort:
    sorting 100k blobs would hold them all in memory at once)."""
    cursor = as_db(conn).execute(
        "SELECT item_kind, item_id, project_id, vector FROM embeddings WHERE model = ?", (model,)
    )
    while rows := cursor.fetchmany(batch):
        for row in rows:
            yield (str(row[0]), int(row[1])), row[2], bytes(row[3])


def counts_by_project(conn: AnyDb, model: str) -> dict[int | None, int]:
    return {
        row[0]: int(row[1])
        for row in as_db(conn).execute(
            "SELECT project_id, COUNT(*) FROM embeddings WHERE model = ? GROUP BY project_id",
            (model,),
        )
    }


def plain_vectors(conn: AnyDb, model: str, refs: list[Ref]) -> dict[Ref, bytes]:
    """Stored (item-only) vectors of some items."""
    out: dict[Ref, bytes] = {}
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        by_kind.setdefault(kind, []).append(item_id)
    for kind, ids in by_kind.items():
        marks = ",".join("?" * len(ids))
        for row in as_db(conn).execute(
            # `model || ''`: look rows up by primary key, never scan the model index (SQLite's
            # `+model` says the same, but is no text operator on PostgreSQL).
            f"SELECT item_id, vector FROM embeddings WHERE item_kind = ? AND model || '' = ? "
            f"AND item_id IN ({marks})",
            (kind, model, *ids),
        ):
            out[(kind, int(row[0]))] = bytes(row[1])
    return out


def predecessors(conn: AnyDb, window_ms: int) -> list[tuple[Ref, Ref]]:
    """(item, the item before it in its thread): same kind, project and session, written
    within `window_ms` before it; newest item first. Summaries have no thread."""
    out: list[tuple[int, Ref, Ref]] = []
    for kind, table in (
        ("observation", "observations"),
        ("memory", "memories"),
        ("prompt", "prompts"),
    ):
        rows = as_db(conn).execute(
            f"""SELECT id, prev_id, created_at FROM (
                  SELECT id, created_at,
                         LAG(id) OVER w AS prev_id, LAG(created_at) OVER w AS prev_at
                  FROM {table}
                  WINDOW w AS (PARTITION BY project_id, session_id ORDER BY created_at, id)) t
                WHERE prev_id IS NOT NULL AND prev_at >= created_at - ?""",
            (window_ms,),
        )
        out.extend((int(r[2]), (kind, int(r[0])), (kind, int(r[1]))) for r in rows)
    out.sort(key=lambda link: (link[0], link[1][1]), reverse=True)
    return [(ref, prev) for _at, ref, prev in out]


def missing(conn: AnyDb, model: str, limit: int, after: dict[str, int] | None = None) -> list[Ref]:
    """Items with no vector of `model` yet (new, edited, or embedded by another model), in id
    order per kind, starting after the ids in `after` (a sweep's cursor)."""
    out: list[Ref] = []
    for kind, (table, *_rest) in SOURCES.items():
        if len(out) >= limit:
            break
        start = (after or {}).get(kind, 0)
        rows = (
            as_db(conn)
            .execute(
                f"SELECT x.id FROM {table} x WHERE x.id > ? AND NOT EXISTS (SELECT 1 FROM embeddings e "
                f"WHERE e.item_kind = ? AND e.item_id = x.id AND e.model = ?) ORDER BY x.id LIMIT ?",
                (start, kind, model, limit - len(out)),
            )
            .fetchall()
        )
        out.extend((kind, int(r[0])) for r in rows)
    return out


def save(
    conn: AnyDb,
    model: str,
    dim: int,
    rows: list[tuple[Ref, int | None, bytes]],
    contexts: list[bytes] | None = None,
) -> None:
    """Store (or replace) the vectors of these items; `contexts`, one per row, their context
    vectors (the item mixed with its thread predecessor), which search finds on pgvector. A
    writer without one (an import, a memory's own vector) stores the plain vector there."""
    db = as_db(conn)
    columns = ["item_kind", "item_id", "project_id", "model", "dim", "vector", "created_at"]
    marks = ["?"] * len(columns)
    at = now_ms()
    values: list[tuple[object, ...]] = [
        (kind, item_id, project_id, model, dim, blob, at)
        for (kind, item_id), project_id, blob in rows
    ]
    if db.native_vectors and rows:
        # pgvector's copies too, searched by the database (store/memory_vectors.py,
        # store/vector_search.py), in the same statement: the HNSW index of a new length must
        # never meet a row's old-length copy.
        pg_vectors.ensure_index(db, dim)
        columns += ["embedding", "context_embedding"]
        marks += ["?::vector", "?::vector"]
        mixed = contexts if contexts is not None else [blob for _r, _p, blob in rows]
        values = [
            (
                *v,
                # The plain copy serves only memories' near-duplicates (memory_vectors.py): for
                # other items it would be a second HNSW index as large as search's, unused.
                pg_vectors.literal(from_blob(blob).tolist()) if ref[0] == "memory" else None,
                pg_vectors.literal(from_blob(context).tolist()),
            )
            for v, (ref, _project, blob), context in zip(values, rows, mixed, strict=True)
        ]
    db.executemany(
        f"INSERT INTO embeddings({', '.join(columns)}) VALUES ({', '.join(marks)}) "
        "ON CONFLICT(item_kind, item_id) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in columns[2:]),
        values,
    )


def coverage_counts(conn: AnyDb, model: str) -> tuple[int, int]:
    """(items embedded with `model`, searchable items in total)."""
    db = as_db(conn)
    total = 0
    for _kind, (table, *_rest) in SOURCES.items():
        total += int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    done = int(
        db.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]
    )
    return min(done, total), total


def clear(conn: AnyDb) -> int:
    """Forget every vector (`cairn reindex`): the background embedder rebuilds them."""
    return as_db(conn).execute("DELETE FROM embeddings").rowcount


# ------------------------------------------------------------------ other workers' vectors
def last_change(conn: AnyDb) -> int | None:
    """The newest entry of the vector change log (0 if none yet), or None where there is no log
    (SQLite: the one worker of the file knows every vector it stores)."""
    db = as_db(conn)
    if db.execute(db.dialect.table_exists(), ("vector_changes",)).fetchone() is None:
        return None
    return int(db.execute("SELECT MAX(seq) FROM vector_changes").fetchone()[0] or 0)


def changes_since(conn: AnyDb, seq: int) -> list[tuple[Ref, int]]:
    """(item, seq) of the vectors stored, replaced or deleted after `seq`, in seq order."""
    rows = as_db(conn).execute(
        "SELECT item_kind, item_id, seq FROM vector_changes WHERE seq > ? ORDER BY seq", (seq,)
    )
    return [((str(r[0]), int(r[1])), int(r[2])) for r in rows]


def stored_of(conn: AnyDb, model: str, refs: list[Ref]) -> dict[Ref, tuple[int | None, bytes]]:
    """(project id, vector) of the items of `refs` that have a vector of `model`."""
    db = as_db(conn)
    out: dict[Ref, tuple[int | None, bytes]] = {}
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        by_kind.setdefault(kind, []).append(item_id)
    for kind, ids in by_kind.items():
        for row in db.execute(
            "SELECT item_id, project_id, vector FROM embeddings WHERE item_kind = ? "
            f"AND model = ? AND {db.dialect.in_ids('item_id')}",
            (kind, model, db.dialect.ids_parameter(sorted(set(ids)))),
        ):
            out[(kind, int(row[0]))] = (row[1], bytes(row[2]))
    return out
