"""The text analysis of worker/terms.py as SQL functions for the keyword index triggers, and the
switch that lets a batch insert write its own index rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from worker.store.db import AnyDb
from worker.terms import index_text, new_terms

SQL_FUNCTION = "cairn_terms"
SQL_NEW_TERMS = "cairn_new_terms"
# `cairn_auto_index()` was migration 9's switch for the observation insert trigger; since
# migration 11 the trigger reads the `index_switch` table instead. The function stays registered
# for migration 9's trigger, which exists until migration 11 replaces it.
SQL_AUTO_INDEX = "cairn_auto_index"


def _sql_terms(*texts: object) -> str:
    return index_text(*(t if isinstance(t, str) else None for t in texts))


def _sql_new_terms(extra: object, *base: object) -> str:
    kept = [t for t in base if isinstance(t, str)]
    return " ".join(new_terms(extra if isinstance(extra, str) else None, *kept))


def register(conn: sqlite3.Connection) -> None:
    """Make `cairn_terms(text, ...)`, `cairn_new_terms(extra, text, ...)` and
    `cairn_auto_index([on])` available to the index triggers on this connection."""
    conn.create_function(SQL_FUNCTION, -1, _sql_terms, deterministic=True)
    conn.create_function(SQL_NEW_TERMS, -1, _sql_new_terms, deterministic=True)
    auto = [1]

    def auto_index(*switch: object) -> int:
        if switch:
            auto[0] = 1 if switch[0] else 0
        return auto[0]

    conn.create_function(SQL_AUTO_INDEX, -1, auto_index)


@contextmanager
def batch_indexing(conn: AnyDb) -> Iterator[None]:
    """The caller writes the index rows of the observations it inserts: the insert trigger is
    off meanwhile (migration 11), within the caller's transaction only (SQLite's index)."""
    if not isinstance(conn, sqlite3.Connection) or not conn.in_transaction:
        raise RuntimeError("batch_indexing needs a write transaction on SQLite")
    conn.execute("UPDATE index_switch SET auto = 0 WHERE id = 1")
    try:
        yield
    finally:
        if conn.in_transaction:  # else SQLite rolled it back, the switch with it
            conn.execute("UPDATE index_switch SET auto = 1 WHERE id = 1")
