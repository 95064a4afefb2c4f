"""Reads of the keyword index (analysed terms per item) and of its change log (`search_changes`,
SQLite's migration 10, PostgreSQL's 4), for the in-memory keyword scorer that copies them.

On SQLite the terms are stored: the `search_index` FTS5 table, filled by triggers that call
worker/terms.py. PostgreSQL cannot run worker/terms.py (`Dialect.writes_index_text`): there the
writer stores them beside the item (migration 6, store/keyword_terms.py) and a worker searches
them in the database (retrieval/db_keywords.py); these reads serve the in-memory scorer where
one is still built over a team database (`bench/search_backends.py --keywords memory`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from worker.store.db import AnyDb, Db, as_db
from worker.store.keyword_terms import ANALYSED, analyse
from worker.store.m002_retrieval import KIND_CODES

# (rowid, title terms, body terms, project id) of one indexed item.
IndexRow = Any


def last_change(conn: AnyDb) -> int:
    """The sequence number of the newest logged change (0 if none)."""
    row = as_db(conn).execute("SELECT MAX(seq) FROM search_changes").fetchone()
    return int(row[0] or 0)


def all_rows(conn: AnyDb, batch: int) -> Iterator[list[IndexRow]]:
    """Every indexed item, `batch` rows at a time."""
    db = as_db(conn)
    if db.dialect.writes_index_text:
        for kind in ANALYSED:
            after = 0
            while chunk := _analysed(db, kind, "id > ? ORDER BY id LIMIT ?", (after, batch)):
                after = chunk[-1][0] // 8
                yield chunk
        return
    rows = db.execute("SELECT rowid, title, body, project_id FROM search_index")
    while chunk := rows.fetchmany(batch):
        yield chunk


def changes_since(conn: AnyDb, seq: int) -> list[tuple[int, int]]:
    """(rowid, seq) of the index rows changed after `seq`, in seq order."""
    rows = (
        as_db(conn)
        .execute("SELECT rid, seq FROM search_changes WHERE seq > ? ORDER BY seq", (seq,))
        .fetchall()
    )
    return [(int(r[0]), int(r[1])) for r in rows]


def rows_of(conn: AnyDb, rowids: list[int]) -> list[IndexRow]:
    """The index rows of these rowids that still exist."""
    db = as_db(conn)
    if db.dialect.writes_index_text:
        out: list[IndexRow] = []
        for kind, code in KIND_CODES.items():
            ids = sorted({r // 8 for r in rowids if r % 8 == code})
            if ids:
                where = db.dialect.in_ids("id")
                out += _analysed(db, kind, where, (db.dialect.ids_parameter(ids),))
        return out
    return db.execute(
        "SELECT rowid, title, body, project_id FROM search_index "
        "WHERE rowid IN (SELECT value FROM json_each(?))",
        (json.dumps(rowids),),
    ).fetchall()


def _analysed(db: Db, kind: str, where: str, params: tuple[Any, ...]) -> list[IndexRow]:
    """(rowid, title terms, body terms, project id) of the `kind` rows `where` selects: as the
    writer stored them (migration 6), or analysed here for a row stored without them."""
    table, title, body = ANALYSED[kind]
    code = KIND_CODES[kind]
    rows = db.execute(
        f"SELECT id, project_id, index_title, index_body, {', '.join((*title, *body))} "
        f"FROM {table} WHERE {where}",
        params,
    ).fetchall()
    out: list[IndexRow] = []
    for row in rows:
        terms = (row[2] or "", row[3]) if row[3] is not None else analyse(kind, tuple(row[4:]))
        out.append((int(row[0]) * 8 + code, *terms, row[1]))
    return out
