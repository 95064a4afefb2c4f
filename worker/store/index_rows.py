"""Reads of the keyword index table (`search_index`, analysed terms per item) and of its change
log (`search_changes`, migration 10), for the in-memory keyword scorer that copies them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

# (rowid, title terms, body terms, project id) of one indexed item.
IndexRow = Any


def last_change(conn: sqlite3.Connection) -> int:
    """The sequence number of the newest logged change (0 if none)."""
    row = conn.execute("SELECT MAX(seq) FROM search_changes").fetchone()
    return int(row[0] or 0)


def all_rows(conn: sqlite3.Connection, batch: int) -> Iterator[list[IndexRow]]:
    """Every indexed item, `batch` rows at a time."""
    rows = conn.execute("SELECT rowid, title, body, project_id FROM search_index")
    while chunk := rows.fetchmany(batch):
        yield chunk


def changes_since(conn: sqlite3.Connection, seq: int) -> list[tuple[int, int]]:
    """(rowid, seq) of the index rows changed after `seq`, in seq order."""
    rows = conn.execute(
        "SELECT rid, seq FROM search_changes WHERE seq > ? ORDER BY seq", (seq,)
    ).fetchall()
    return [(int(r[0]), int(r[1])) for r in rows]


def rows_of(conn: sqlite3.Connection, rowids: list[int]) -> list[IndexRow]:
    """The index rows of these rowids that still exist."""
    return conn.execute(
        "SELECT rowid, title, body, project_id FROM search_index "
        "WHERE rowid IN (SELECT value FROM json_each(?))",
        (json.dumps(rowids),),
    ).fetchall()
