"""One leader per periodic job across the workers of a team database (store/pg/leader.py): two
real PgStores on one PostgreSQL database, as two workers would open it."""

from __future__ import annotations

import psycopg
import pytest

from tests.test_lifecycle import wait_for
from worker.store import Store
from worker.store.errors import StoreUnavailable
from worker.store.pg import PgStore
from worker.store.pg.leader import lock_key

pytestmark = pytest.mark.postgres


def opened(url: str) -> PgStore:
    store = PgStore(url)
    store.open()
    return store


def holder_pid(url: str, job: str) -> int | None:
    """The server process holding `job`'s advisory lock, seen from another connection."""
    # A 64-bit key shows as its high (classid) and low (objid) halves; the shift wraps as the
    # key's two's complement does.
    with psycopg.connect(url, autocommit=True) as admin:
        row = admin.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND objsubid = 1 AND (classid::bigint << 32) + objid::bigint = %s",
            (lock_key(job),),
        ).fetchone()
    return int(row[0]) if row is not None else None


def test_one_of_two_workers_leads_and_the_other_takes_over_when_it_closes(pg_url: str) -> None:
    first, second = opened(pg_url), opened(pg_url)
    try:
        assert first.leads("decay")
        assert not second.leads("decay")
        assert first.leads("decay") and not second.leads("decay")  # asked again: unchanged
        assert second.leads("compress")  # each job has its own leader
        assert not first.leads("compress")
        assert holder_pid(pg_url, "decay") is not None
        first.close()
        # (The server ends the closed session a moment after the client hangs up.)
        assert wait_for(lambda: second.leads("decay"))
        assert second.leads("compress")
    finally:
        first.close()
        second.close()
    # Closing the last leader releases the job.
    assert wait_for(lambda: holder_pid(pg_url, "decay") is None)


def test_a_leader_whose_connection_is_killed_loses_the_job(pg_url: str) -> None:
    first, second = opened(pg_url), opened(pg_url)
    try:
        assert first.leads("decay") and not second.leads("decay")
        pid = holder_pid(pg_url, "decay")
        assert pid is not None
        with psycopg.connect(pg_url, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        # The worker did not stop: it notices at its next question, and so does the other.
        assert wait_for(lambda: second.leads("decay"))
        assert not first.leads("decay")
        assert holder_pid(pg_url, "decay") not in (None, pid)
    finally:
        first.close()
        second.close()


def test_a_closed_store_leads_nothing(pg_url: str) -> None:
    store = opened(pg_url)
    store.close()
    with pytest.raises(StoreUnavailable):
        store.leads("decay")


def test_lock_keys_are_stable_64_bit_and_differ_by_job() -> None:
    assert lock_key("decay") == lock_key("decay") != lock_key("compress")
    assert -(2**63) <= lock_key("decay") < 2**63


@pytest.mark.parametrize("job", ["decay", "compress"])
def test_a_sqlite_worker_always_leads(store: Store, job: str) -> None:
    assert store.leads(job) and store.leads(job)
