from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.worker_process import WorkerProcess


@pytest.fixture
def database_env(backend: str) -> dict[str, str]:
    """env_extra for a process of the test's home (a worker, or a hook, CLI or MCP server that
    starts one): nothing on `sqlite` (the home's file), on `postgres` the test's team database
    (CAIRN_DATABASE_URL, which the `backend` fixture set)."""
    url = os.environ.get("CAIRN_DATABASE_URL", "")
    return {"CAIRN_DATABASE_URL": url} if url else {}


@pytest.fixture
def worker(isolated_home: Path, database_env: dict[str, str]) -> Iterator[WorkerProcess]:
    """A real uvicorn worker on a free loopback port, stopped (by its PID) after the test; on
    the `postgres` backend (modules marked both_backends) over the test's team database."""
    proc = WorkerProcess(home=isolated_home, env_extra=database_env)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def other_database(request: pytest.FixtureRequest, backend: str) -> Iterator[dict[str, str]]:
    """env_extra for a WorkerProcess of another home that gives it a second, empty database: its
    own SQLite file (nothing to add), or on `postgres` a new database of the run's server."""
    if backend != "postgres":
        yield {}
        return
    with request.getfixturevalue("postgres_server").database() as url:
        yield {"CAIRN_DATABASE_URL": url}
