from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
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


class ModuleWorkers:
    """Real workers a module's tests share, one per backend, each started by the first test on
    it: in a tmp home of its own, on postgres over a database of the run's server for the module.
    For modules where a worker per test would cost most of the time (a browser, a fuzzer)."""

    def __init__(self, stack: contextlib.ExitStack, tmp_path_factory: pytest.TempPathFactory):
        self.stack = stack
        self.tmp_path_factory = tmp_path_factory
        self.started: dict[str, WorkerProcess] = {}

    def worker(
        self,
        request: pytest.FixtureRequest,
        backend: str,
        env: dict[str, str],
        prepare: Callable[[WorkerProcess], object] | None = None,
    ) -> WorkerProcess:
        """The module's worker on `backend`; the first call starts it with `env` added and
        runs `prepare` on it (e.g. to give it some data)."""
        if backend not in self.started:
            base = self.tmp_path_factory.mktemp("module-worker")
            (base / "user-home").mkdir()
            env = {"HOME": str(base / "user-home"), **env}
            if backend == "postgres":
                server = request.getfixturevalue("postgres_server")
                env["CAIRN_DATABASE_URL"] = self.stack.enter_context(server.database())
            proc = WorkerProcess(home=base / "cairn-home", env_extra=env)
            self.stack.callback(proc.stop)
            proc.start()
            if prepare is not None:
                prepare(proc)
            self.started[backend] = proc
        return self.started[backend]


@pytest.fixture(scope="module")
def module_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleWorkers]:
    with contextlib.ExitStack() as stack:
        yield ModuleWorkers(stack, tmp_path_factory)
