"""SQL against the test's own database, on either backend (the `store` fixture's connection):
for the few API tests that look under the API (a row count, a planted row)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from worker.store.backend import Backend


def rows(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of a SELECT (`?` placeholders on both backends)."""
    return store.read_sync(lambda db: db.tuples(sql, parameters))


def value(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> Any:
    """The first column of the first row of a SELECT."""
    return rows(store, sql, parameters)[0][0]


def execute(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> None:
    """One write statement, committed."""
    store.write_sync(lambda db: db.execute(sql, parameters))
