"""The team database's circuit breaker (worker/store/pg/breaker.py) on a real PostgreSQL server of
the test's own: silent (every server process stopped with SIGSTOP), down (shut down), and merely
slow (a query waiting on a lock the test holds). No wall-clock limit: "at once" is shown by
requests answered while the server is still frozen, which nothing but the breaker can do."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import psycopg
import pytest

from tests import pg
from tests.e2e.hook_runner import wait_for
from worker.store import memories
from worker.store.errors import StoreUnavailable
from worker.store.pg import PgStore

pytestmark = pytest.mark.postgres

APP = "github.com/acme/app"
# A request still unanswered after this is hung (a guard against a stuck test, not a speed aim).
HANG_S = 60.0
LOCK_KEY = 424242


@pytest.fixture(scope="module")
def own_server() -> Iterator[pg.PostgresServer]:
    """A server of this module's own: freezing or stopping it touches no other module's tests."""
    with pg.throwaway_server() as server:
        yield server


@pytest.fixture
def store(own_server: pg.PostgresServer) -> Iterator[PgStore]:
    """A store on a new database of the module's server, running and answering (as a test
    that froze or stopped it may have left it)."""
    own_server.thaw()
    if own_server.process is None or own_server.process.poll() is not None:
        own_server.start(own_server.port)
    with own_server.database() as url:
        store = PgStore(url)
        store.open()
        try:
            yield store
        finally:
            own_server.thaw()
            store.close()


def save(content: str) -> Callable[[Any], Any]:
    return lambda c: memories.insert(c, {"content": content, "kind": "fact", "project": APP})


def contents(store: PgStore) -> list[str]:
    return store.read_sync(
        lambda c: [r[0] for r in c.execute("SELECT content FROM memories ORDER BY id")]
    )


def breaker(store: PgStore) -> dict[str, Any]:
    return dict(store.describe()["breaker"])


def test_a_silent_database_is_found_once_then_every_request_is_refused_at_once(
    own_server: pg.PostgresServer, store: PgStore
) -> None:
    store.write_sync(save("Before the outage"))  # a pooled connection, as in a running worker
    recovered = threading.Event()
    store.add_recovery_listener(recovered.set)
    own_server.freeze()
    with ThreadPoolExecutor(2) as pool:
        # The first write meets the silence and waits; the second queues behind its write lock.
        first: Future[Any] = pool.submit(store.write_sync, save("Lost in the outage"))
        second: Future[Any] = pool.submit(store.write_sync, save("Queued in the outage"))
        wait_for(lambda: breaker(store)["state"] == "open", timeout=HANG_S)
        # Both end while the server is still frozen: cut and refused, neither acknowledged.
        with pytest.raises(StoreUnavailable, match="connection was lost"):
            first.result(timeout=HANG_S)
        with pytest.raises(StoreUnavailable, match="refused at once"):
            second.result(timeout=HANG_S)
        # Later requests never reach the database: refused, saying why and that a retry is safe.
        later = pool.submit(store.write_sync, save("After the breaker opened"))
        with pytest.raises(StoreUnavailable) as refused:
            later.result(timeout=HANG_S)
        read = pool.submit(contents, store)
        with pytest.raises(StoreUnavailable, match="refused at once"):
            read.result(timeout=HANG_S)
    message = refused.value.message
    assert message.startswith(f"the team database {store.where} is unreachable since ")
    # Why: the check's `SELECT 1` unanswered, or its connect timed out (libpq's connect_timeout
    # is at least 2 s, the check's own wait).
    assert re.search(
        r"since \S+ \((it does not answer: no reply in 2 s|connection timeout expired)\)", message
    )
    assert "retrying with its event id is safe" in message
    state = breaker(store)
    assert state["trips"] == 1 and state["refused"] >= 3 and not recovered.is_set()

    own_server.thaw()
    wait_for(recovered.is_set, timeout=HANG_S)  # found back by the breaker's own check
    assert breaker(store)["state"] == "closed"
    store.write_sync(save("After the outage"))
    # Nothing refused or cut was kept; everything acknowledged was.
    assert contents(store) == ["Before the outage", "After the outage"]


def test_a_host_that_accepts_and_never_answers_opens_the_breaker_while_a_connect_waits(
    own_server: pg.PostgresServer, store: PgStore
) -> None:
    """The server down and a listener of the test's own on its port that accepts connections
    and never answers: a new connection waits its whole connect timeout (10 s); the breaker's
    check finds the silence meanwhile, and the next request does not wait."""
    own_server.shut_down()  # its pooled connections end with it: the next read connects anew
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", own_server.port))
        listener.listen(16)
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(contents, store)
            wait_for(lambda: breaker(store)["state"] == "open", timeout=HANG_S)
            with pytest.raises(StoreUnavailable, match="refused at once"):
                pool.submit(contents, store).result(timeout=HANG_S)
            with pytest.raises(StoreUnavailable, match="connection timeout expired"):
                first.result(timeout=HANG_S)
    # Who opened it: the breaker's own check (it does not answer), or on a loaded machine the
    # first connect's timeout when it came before the check did; either way the next request
    # was refused at once above.
    reason = breaker(store)["reason"]
    assert "it does not answer" in reason or "connection timeout expired" in reason, reason
    own_server.start(own_server.port)
    wait_for(lambda: breaker(store)["state"] == "closed", timeout=HANG_S)
    assert contents(store) == []


def test_a_slow_query_on_an_answering_database_never_opens_the_breaker(
    own_server: pg.PostgresServer, store: PgStore
) -> None:
    checks_before = breaker(store)["checks"]
    with psycopg.connect(own_server.url(store_database(store)), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))

        def slow(c: Any) -> Any:
            c.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))  # waits for the test
            return save("Slow but kept")(c)

        with ThreadPoolExecutor(1) as pool:
            write = pool.submit(store.write_sync, slow)
            # Stalled past the breaker's patience: it checks the database, which answers.
            wait_for(lambda: breaker(store)["checks"] > checks_before, timeout=HANG_S)
            assert contents(store) == []  # reads go on meanwhile
            holder.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
            write.result(timeout=HANG_S)
    state = breaker(store)
    assert state["state"] == "closed" and state["trips"] == 0 and state["refused"] == 0
    assert contents(store) == ["Slow but kept"]


def test_a_server_that_refuses_never_opens_the_breaker_so_its_return_is_seen_at_once(
    own_server: pg.PostgresServer, store: PgStore
) -> None:
    """Down, the server refuses each connection at once: every request fails by itself, fast,
    so refusing them unasked would only hide the server's return until the next check."""
    store.write_sync(save("Before"))
    own_server.shut_down()
    for content in ("Refused", "Refused again"):
        with pytest.raises(StoreUnavailable, match="unreachable: connection failed"):
            store.write_sync(save(content))
    own_server.start(own_server.port)
    store.write_sync(save("After"))  # the first request after the return goes through
    assert contents(store) == ["Before", "After"]
    state = breaker(store)
    assert state["state"] == "closed" and state["trips"] == 0 and state["refused"] == 0


def store_database(store: PgStore) -> str:
    """The database name of the store's URL (the server's own URL helper takes a name)."""
    return store.where.rsplit("/", 1)[1]
