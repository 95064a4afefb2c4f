"""SQL against the test's own database, on either backend (the `store` fixture's connection):
for the few API tests that look under the API (a row count, a planted row)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from worker.settings import Settings
from worker.store.backend import Backend, make_store
from worker.team import database_url


@contextlib.contextmanager
def opened_store(settings: Settings) -> Iterator[Backend]:
    """The test's database opened as its app opens it (CAIRN_DATABASE_URL set: PostgreSQL)."""
    opened = make_store(settings, database_url(settings.home, os.environ))
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


def rows(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of a SELECT (`?` placeholders on both backends)."""
    return store.read_sync(lambda db: db.tuples(sql, parameters))


def value(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> Any:
    """The first column of the first row of a SELECT."""
    return rows(store, sql, parameters)[0][0]


def execute(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> None:
    """One write statement, committed."""
    store.write_sync(lambda db: db.execute(sql, parameters))
