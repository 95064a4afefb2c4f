"""Relations between memories (store/relations.py) on SQLite and PostgreSQL (`backend_store`):
an `updates` link supersedes, removing it makes the older memory the latest again, and the
update chain is walked both ways."""

from __future__ import annotations

from typing import Any

import pytest

from worker.store import Store, memories
from worker.store import relations as rq
from worker.store.pg import PgStore

AnyStore = Store | PgStore


def saved(store: AnyStore, *contents: str) -> list[int]:
    def write(conn: Any) -> list[int]:
        items = [{"content": text, "kind": "fact", "project": "/repo"} for text in contents]
        return [memories.insert(conn, item)[0]["id"] for item in items]

    return store.write_sync(write)


def superseded_by(store: AnyStore, memory_id: int) -> Any:
    row = store.read_sync(lambda c: memories.get(c, memory_id))
    assert row is not None
    return row["superseded_by"]


def test_an_update_supersedes_and_its_removal_restores_the_older(backend_store: AnyStore) -> None:
    old, new, newest = saved(backend_store, "Node 18", "Node 20", "Node 22")
    rel, created = backend_store.write_sync(lambda c: rq.add(c, new, old, "updates", "manual"))
    assert created and (rel["from_id"], rel["to_id"], rel["kind"]) == (new, old, "updates")
    again, created = backend_store.write_sync(lambda c: rq.add(c, new, old, "updates"))
    assert not created and again["id"] == rel["id"]
    assert superseded_by(backend_store, old) == new
    later, _ = backend_store.write_sync(lambda c: rq.add(c, newest, old, "updates"))
    # Removing the newer link leaves the other one superseding.
    assert backend_store.write_sync(lambda c: rq.remove(c, later["id"])) is not None
    assert superseded_by(backend_store, old) == new
    assert backend_store.write_sync(lambda c: rq.remove(c, rel["id"])) is not None
    assert superseded_by(backend_store, old) is None
    assert backend_store.write_sync(lambda c: rq.remove(c, rel["id"])) is None


def test_a_reverse_update_replaces_the_link(backend_store: AnyStore) -> None:
    a, b = saved(backend_store, "Use tabs", "Use spaces")
    backend_store.write_sync(lambda c: rq.add(c, b, a, "updates"))
    backend_store.write_sync(lambda c: rq.add(c, a, b, "updates"))
    assert superseded_by(backend_store, b) == a and superseded_by(backend_store, a) is None
    links = backend_store.read_sync(lambda c: rq.for_memory(c, a))
    assert [(r["from_id"], r["to_id"]) for r in links] == [(a, b)]


def test_the_update_chain_and_other_kinds(backend_store: AnyStore) -> None:
    one, two, three, note = saved(backend_store, "v1", "v2", "v3", "see also")
    backend_store.write_sync(lambda c: rq.add(c, two, one, "updates"))
    backend_store.write_sync(lambda c: rq.add(c, three, two, "updates"))
    extends, _ = backend_store.write_sync(lambda c: rq.add(c, note, two, "extends"))
    assert extends["reason"] == "manual" and extends["created_at"].endswith("Z")
    newer, older = backend_store.read_sync(lambda c: rq.update_links(c, one))
    assert newer == {one: two, two: three} and older == {two: one, three: two}
    assert superseded_by(backend_store, two) == three  # `extends` supersedes nothing
    kinds = [r["kind"] for r in backend_store.read_sync(lambda c: rq.for_memory(c, two))]
    assert sorted(kinds) == ["extends", "updates", "updates"]


def test_deleting_a_memory_deletes_its_relations(backend_store: AnyStore) -> None:
    a, b = saved(backend_store, "first", "second")
    rel, _ = backend_store.write_sync(lambda c: rq.add(c, b, a, "derives"))
    backend_store.write_sync(lambda c: c.execute("DELETE FROM memories WHERE id = ?", (b,)))
    assert backend_store.read_sync(lambda c: rq.get(c, rel["id"])) is None


@pytest.mark.parametrize("kind", ["replaces", ""])
def test_an_unknown_kind_is_refused_by_the_database(backend_store: AnyStore, kind: str) -> None:
    a, b = saved(backend_store, "x1", "x2")
    with pytest.raises(Exception, match=r"(?i)check"):
        backend_store.write_sync(lambda c: rq.add(c, b, a, kind))
