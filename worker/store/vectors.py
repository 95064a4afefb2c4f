"""The embeddings table: vectors as little-endian float32 blobs tagged with the model id."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from worker.clock import now_ms
from worker.store.m002_retrieval import SOURCES

Ref = tuple[str, int]


def iter_vectors(
    conn: sqlite3.Connection, model: str, batch: int = 5000
) -> Iterator[tuple[Ref, int | None, bytes]]:
    """Every stored vector of `model`: ((kind, id), project_id, blob), oldest item first (an
    item's thread predecessor always comes before it)."""
    parts = [
        f"SELECT e.item_kind, e.item_id, e.project_id, e.vector, x.{'updated_at' if table == 'summaries' else 'created_at'} AS at "
        f"FROM embeddings e JOIN {table} x ON x.id = e.item_id "
        f"WHERE e.item_kind = '{kind}' AND e.model = :model"
        for kind, (table, *_rest) in SOURCES.items()
    ]
    cursor = conn.execute(" UNION ALL ".join(parts) + " ORDER BY at, item_id", {"model": model})
    while rows := cursor.fetchmany(batch):
        for row in rows:
            yield (str(row[0]), int(row[1])), row[2], bytes(row[3])


def plain_vectors(conn: sqlite3.Connection, model: str, refs: list[Ref]) -> dict[Ref, bytes]:
    """Stored (item-only) vectors of some items."""
    out: dict[Ref, bytes] = {}
    for kind, item_id in refs:
        row = conn.execute(
            "SELECT vector FROM embeddings WHERE item_kind = ? AND item_id = ? AND model = ?",
            (kind, item_id, model),
        ).fetchone()
        if row is not None:
            out[(kind, item_id)] = bytes(row[0])
    return out


def predecessors(conn: sqlite3.Connection, window_ms: int) -> list[tuple[Ref, Ref]]:
    """(item, the item before it in its thread): same kind, project and session, written
    within `window_ms` before it. Summaries have no thread."""
    out: list[tuple[Ref, Ref]] = []
    for kind, table in (
        ("observation", "observations"),
        ("memory", "memories"),
        ("prompt", "prompts"),
    ):
        rows = conn.execute(
            f"""SELECT id, prev_id FROM (
                  SELECT id, created_at,
                         LAG(id) OVER w AS prev_id, LAG(created_at) OVER w AS prev_at
                  FROM {table}
                  WINDOW w AS (PARTITION BY project_id, session_id ORDER BY created_at, id))
                WHERE prev_id IS NOT NULL AND prev_at >= created_at - ?""",
            (window_ms,),
        )
        out.extend(((kind, int(r[0])), (kind, int(r[1]))) for r in rows)
    return out


def missing(
    conn: sqlite3.Connection, model: str, limit: int, after: dict[str, int] | None = None
) -> list[Ref]:
    """Items with no vector of `model` yet (new, edited, or embedded by another model), in id
    order per kind, starting after the ids in `after` (a sweep's cursor)."""
    out: list[Ref] = []
    for kind, (table, *_rest) in SOURCES.items():
        if len(out) >= limit:
            break
        start = (after or {}).get(kind, 0)
        rows = conn.execute(
            f"SELECT x.id FROM {table} x WHERE x.id > ? AND NOT EXISTS (SELECT 1 FROM embeddings e "
            f"WHERE e.item_kind = ? AND e.item_id = x.id AND e.model = ?) ORDER BY x.id LIMIT ?",
            (start, kind, model, limit - len(out)),
        ).fetchall()
        out.extend((kind, int(r[0])) for r in rows)
    return out


def save(
    conn: sqlite3.Connection, model: str, dim: int, rows: list[tuple[Ref, int | None, bytes]]
) -> None:
    at = now_ms()
    conn.executemany(
        "INSERT OR REPLACE INTO embeddings(item_kind, item_id, project_id, model, dim, vector, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (kind, item_id, project_id, model, dim, blob, at)
            for (kind, item_id), project_id, blob in rows
        ],
    )


def coverage_counts(conn: sqlite3.Connection, model: str) -> tuple[int, int]:
    """(items embedded with `model`, searchable items in total)."""
    total = 0
    for _kind, (table, *_rest) in SOURCES.items():
        total += int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    done = int(
        conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]
    )
    return min(done, total), total


def clear(conn: sqlite3.Connection) -> int:
    """Forget every vector (`cairn reindex`): the background embedder rebuilds them."""
    return conn.execute("DELETE FROM embeddings").rowcount
