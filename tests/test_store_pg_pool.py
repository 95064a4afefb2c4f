"""The PostgreSQL store's connection pool across a server that ends its connections (a restart,
an administrator's pg_terminate_backend): the next unit of work reconnects instead of failing."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest

from worker.store import memories
from worker.store.pg import PgStore

pytestmark = pytest.mark.postgres

APP = "github.com/acme/app"


def idle_connections(store: PgStore, n: int) -> set[int]:
    """Make the pool hold `n` idle connections (n reads at once); their server process ids."""
    barrier = threading.Barrier(n)
    pids: set[int] = set()

    def read() -> None:
        def run(c: Any) -> None:
            barrier.wait()
            pids.add(int(c.execute("SELECT pg_backend_pid()").fetchone()[0]))

        store.read_sync(run)

    threads = [threading.Thread(target=read) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return pids


def test_idle_connections_the_server_ended_are_replaced_not_failed_on(pg_url: str) -> None:
    store = PgStore(pg_url)
    store.open()
    try:
        pids = idle_connections(store, 3)
        assert len(pids) == 3
        # What a fast shutdown does to every session: FATAL "terminating connection due to
        # administrator command", then the socket closed. Here with the server still up.
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for pid in pids:
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        # Every unit of work after that succeeds at once, reads and writes, on new connections.
        for n in range(4):
            _row, created = store.write_sync(
                lambda c, n=n: memories.insert(
                    c, {"content": f"Fact number {n}", "kind": "fact", "project": APP}
                )
            )
            assert created
            now = store.read_sync(lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0])
            assert now not in pids
        count = store.read_sync(lambda c: c.execute("SELECT count(*) FROM memories").fetchone())
        assert count[0] == 4
    finally:
        store.close()
