"""SQL against the test's own database, on either backend (the `store` fixture's connection):
for the few API tests that look under the API (a row count, a planted row)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from worker.settings import Settings, load_settings
from worker.store.backend import Backend, make_store
from worker.team import database_url


@contextlib.contextmanager
def opened_store(settings: Settings, env: Mapping[str, str] | None = None) -> Iterator[Backend]:
    """The test's database opened as its app opens it (CAIRN_DATABASE_URL set: PostgreSQL);
    with `env`, as a process of that environment opens it."""
    opened = make_store(settings, database_url(settings.home, os.environ if env is None else env))
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


def process_store(env: Mapping[str, str]) -> contextlib.AbstractContextManager[Backend]:
    """The database a process started with `env` uses (e.g. a real worker's, its env()): the
    home's SQLite file, or the team database its CAIRN_DATABASE_URL names."""
    return opened_store(load_settings(env), env)


def rows(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of a SELECT (`?` placeholders on both backends)."""
    return store.read_sync(lambda db: db.tuples(sql, parameters))


def value(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> Any:
    """The first column of the first row of a SELECT."""
    return rows(store, sql, parameters)[0][0]


def execute(store: Backend, sql: str, parameters: Sequence[Any] = ()) -> None:
    """One write statement, committed."""
    store.write_sync(lambda db: db.execute(sql, parameters))


def process_counts(env: Mapping[str, str], backend: str, tables: Sequence[str]) -> dict[str, int]:
    """Rows per table in the database a worker's environment names (its home's file, or the team
    database), checked to be on the backend the test runs on."""
    with process_store(env) as store:
        assert store.backend == backend
        return {t: int(value(store, f"SELECT COUNT(*) FROM {t}")) for t in tables}
