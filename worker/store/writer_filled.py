"""The columns a writer fills from a row's other columns where the database cannot, for rows
written whole (an import): PostgreSQL's keyword index words (worker/terms.py cannot run in a
trigger there; SQLite's triggers call it) and pgvector's copy of a vector blob.

The words are split exactly as the store modules split them when they write (memories.py,
sessions.py's prompts, observations.py, summaries.py), so an imported row is found by the same
searches as one written live.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from worker.store.db import Db
from worker.store.keyword_terms import analyse
from worker.store.memories import index_text
from worker.terms import split_text


def _analysed(
    kind: str, values: Callable[[Any], tuple[Any, ...]]
) -> tuple[tuple[str, Callable[[Any], str]], ...]:
    """The worker's analysed terms of a row (PostgreSQL migration 6), title and body."""
    return (
        ("index_title", lambda r: analyse(kind, values(r))[0]),
        ("index_body", lambda r: analyse(kind, values(r))[1]),
    )


# table -> (the columns read, the key, (filled column, its value from those columns, by position)...)
Filler = tuple[tuple[str, ...], str, tuple[tuple[str, Callable[[Any], str]], ...]]
FILLERS: dict[str, Filler] = {
    "memories": (
        ("content", "tags"),
        "id",
        (
            ("search_text", lambda r: index_text(r[0], r[1])),
            *_analysed("memory", lambda r: (r[0], r[1])),
        ),
    ),
    "prompts": (
        ("text",),
        "id",
        (("search_text", lambda r: split_text(r[0])), *_analysed("prompt", lambda r: (r[0],))),
    ),
    "observations": (
        ("title", "body", "files"),
        "id",
        (
            ("search_title", lambda r: split_text(r[0])),
            ("search_text", lambda r: split_text(r[1], r[2])),
            *_analysed("observation", lambda r: (r[0], r[1], r[2])),
        ),
    ),
    "summaries": (
        ("request", "completed", "learned", "files", "next_steps"),
        "id",
        (
            ("search_title", lambda r: split_text(r[0])),
            ("search_text", lambda r: split_text(r[1], r[2], r[3], r[4])),
            # keyword_terms.ANALYSED's order: request; completed, learned, next_steps, files.
            *_analysed("summary", lambda r: (r[0], r[1], r[2], r[4], r[3])),
        ),
    ),
}


def with_derived(db: Db, table: str, row: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(`row` with its writer-filled columns, True) when `row` holds every column they are made
    of, to be written in one statement; else (`row`, False): write it, then `fill_derived`.
    Vectors always take `fill_derived` (pgvector's column is written from SQL)."""
    filler = FILLERS.get(table)
    if filler is None or not db.dialect.writes_index_text:
        return row, table != "embeddings"
    reads, _key, fills = filler
    if not all(isinstance(row.get(c), str) for c in reads):
        return row, False
    stored = tuple(row[c] for c in reads)
    return {**row, **{c: value(stored) for c, value in fills}}, True


def fill_derived(db: Db, table: str, row: dict[str, Any]) -> None:
    """Fill the writer-filled columns of the stored row `row` names (by its key), if any."""
    if table == "embeddings":
        if db.native_vectors:
            _fill_vector(db, row)
        return
    filler = FILLERS.get(table)
    if filler is None or not db.dialect.writes_index_text:
        return
    reads, key, fills = filler
    stored = db.execute(
        f"SELECT {', '.join(reads)} FROM {table} WHERE {key} = ?", (row[key],)
    ).fetchone()
    if stored is None:
        return
    db.execute(
        f"UPDATE {table} SET {', '.join(f'{c} = ?' for c, _ in fills)} WHERE {key} = ?",
        (*(value(stored) for _, value in fills), row[key]),
    )


def _fill_vector(db: Db, row: dict[str, Any]) -> None:
    from worker.store.pg import vectors as pg_vectors
    from worker.store.vectors import from_blob

    stored = db.execute(
        "SELECT vector, dim FROM embeddings WHERE item_kind = ? AND item_id = ?",
        (row["item_kind"], row["item_id"]),
    ).fetchone()
    if stored is None:
        return
    blob = bytes(stored[0])
    values = from_blob(blob) if len(blob) % 4 == 0 else None
    if values is None or len(values) != int(stored[1]) or len(values) == 0:
        return  # a blob that is not `dim` floats: kept as stored, compared by nobody
    pg_vectors.ensure_index(db, len(values))
    literal = pg_vectors.literal(values.tolist())
    plain = literal if row["item_kind"] == "memory" else None  # as store/vectors.py's save
    db.execute(
        # Search's context copy starts as the plain vector (an import carries no context).
        "UPDATE embeddings SET embedding = ?::vector, context_embedding = ?::vector "
        "WHERE item_kind = ? AND item_id = ?",
        (plain, literal, row["item_kind"], row["item_id"]),
    )
