"""Named values (store/kv.py) and the plan clock built on them (store/plans.py), on SQLite and
PostgreSQL (`backend_store`)."""

from __future__ import annotations

from worker.store import Store, kv, plans
from worker.store.pg import PgStore

AnyStore = Store | PgStore


def test_values_round_trip_and_a_second_put_replaces(backend_store: AnyStore) -> None:
    assert backend_store.read_sync(lambda c: kv.get_json(c, "missing")) is None
    backend_store.write_sync(lambda c: kv.put_json(c, "k", {"n": 1, "text": "é"}))
    backend_store.write_sync(lambda c: kv.put_json(c, "k", [1, 2]))
    assert backend_store.read_sync(lambda c: kv.get_json(c, "k")) == [1, 2]
    backend_store.write_sync(
        lambda c: c.execute("UPDATE kv SET value = ? WHERE key = ?", ("{not json", "k"))
    )
    assert backend_store.read_sync(lambda c: kv.get_json(c, "k")) is None


def test_an_older_plan_is_not_newer_than_the_stored_one(backend_store: AnyStore) -> None:
    assert backend_store.read_sync(lambda c: plans.is_newer(c, "s1", 5_000))
    backend_store.write_sync(lambda c: plans.stamp(c, "s1", 5_000))
    newer = backend_store.read_sync(
        lambda c: [plans.is_newer(c, "s1", at) for at in (4_999, 5_000, 6_000, None)]
    )
    assert newer == [False, True, True, True]
    assert backend_store.read_sync(lambda c: plans.is_newer(c, "s2", 1))  # another session
