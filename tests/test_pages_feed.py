"""The feed's read model: one newest-first stream over four tables, paged by cursor (on SQLite
and PostgreSQL: `backend_store`, and for the property test a new store per example)."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from worker.store import Store, feed, observations, projects, sessions, summaries
from worker.store.pg import PgStore

pytestmark = pytest.mark.both_backends

AnyStore = Store | PgStore

T0 = 1_700_000_000_000


NewStore = Callable[[], contextlib.AbstractContextManager[AnyStore]]


@pytest.fixture
def new_store(
    request: pytest.FixtureRequest, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> NewStore:
    """Opens a new, empty store of the test's backend at each call (a property test's example
    each gets its own): a SQLite file in a new tmp folder, or a new database of the run's server."""

    @contextlib.contextmanager
    def opened() -> Iterator[AnyStore]:
        with contextlib.ExitStack() as stack:
            store: AnyStore
            if backend == "postgres":
                server = request.getfixturevalue("postgres_server")
                store = PgStore(stack.enter_context(server.database()))
            else:
                store = Store(tmp_path_factory.mktemp("feed") / "c.db")
            store.open()
            stack.callback(store.close)
            yield store

    return opened


def fill(store: AnyStore, times: list[int]) -> list[tuple[str, int]]:
    """Observations, prompts and memories at the given times (ties on purpose), and a summary at
    the first."""

    def write(conn: Any) -> list[tuple[str, int]]:
        pid = projects.ensure(conn, "/repo/a")
        sessions.ensure(conn, "s", pid)
        made: list[tuple[str, int]] = []
        for n, at in enumerate(times):
            if n % 3 == 0:
                row, _ = observations.insert(
                    conn,
                    {"project": "/repo/a", "type": "note", "title": f"o{n}", "created_at_ms": at},
                )
                made.append(("observation", row["id"]))
            elif n % 3 == 1:
                made.append(("prompt", sessions.add_prompt(conn, "s", pid, f"p{n}", at)["id"]))
            else:
                memory_id = conn.insert(
                    "INSERT INTO memories(project_id, kind, content, content_hash, created_at, "
                    "updated_at) VALUES (?, 'fact', ?, ?, ?, ?)",
                    (pid, f"m{n}", f"h{n}", at, at),
                )
                made.append(("memory", memory_id))
        if times:
            summary, _ = summaries.upsert(
                conn, "s", pid, request="r", completed=["c"], files=[], learned=["l"],
                next_steps=[], at=times[0],
            )  # fmt: skip
            made.append(("summary", summary["id"]))
        return made

    return store.write_sync(write)


def walk(store: AnyStore, limit: int, **filters: Any) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []
    cursor = None
    for _ in range(1000):
        items, cursor = store.read_sync(
            lambda c, cur=cursor: feed.stream(
                c, visible_to=None, before=cur, limit=limit, **filters
            )
        )
        seen.extend((i["kind"], i["id"]) for i in items)
        if cursor is None:
            return seen
    raise AssertionError("the cursor never ended")


def test_pages_cover_everything_once_newest_first(backend_store: AnyStore) -> None:
    store = backend_store
    times = [T0 + (n // 4) * 1000 for n in range(40)]  # groups of four share a timestamp
    random.Random(1).shuffle(times)
    made = fill(store, times)
    seen = walk(store, limit=7)
    assert sorted(seen) == sorted(made)
    assert len(seen) == len(set(seen))
    stamps = [
        store.read_sync(lambda c, k=k, i=i: feed.item(c, k, i, visible_to=None))["at"]  # type: ignore[index]
        for k, i in seen
    ]
    assert stamps == sorted(stamps, reverse=True)
    summary = next(i for k, i in seen if k == "summary")
    shown = store.read_sync(lambda c: feed.item(c, "summary", summary, visible_to=None))
    assert shown is not None and (shown["title"], shown["body"]) == ("r", "c\nl\n")


# The fixture is a factory: every example opens a store of its own, nothing is shared.
@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    times=st.lists(st.integers(min_value=0, max_value=5), min_size=0, max_size=25),
    limit=st.integers(min_value=1, max_value=6),
)
def test_any_ties_and_page_size_lose_nothing(
    new_store: NewStore, times: list[int], limit: int
) -> None:
    with new_store() as store:
        made = fill(store, [T0 + t for t in times])
        seen = walk(store, limit=limit)
    assert sorted(seen) == sorted(made) and len(seen) == len(set(seen))


def test_forward_from_a_moment_and_filters(backend_store: AnyStore) -> None:
    store = backend_store
    fill(store, [T0 + n * 1000 for n in range(9)])
    newer, _ = store.read_sync(
        lambda c: feed.stream(c, visible_to=None, after=(T0 + 4000, "~", 0), limit=50)
    )
    assert [i["at"] for i in newer] == [T0 + n * 1000 for n in range(5, 9)]
    prompts, _ = store.read_sync(
        lambda c: feed.stream(c, visible_to=None, type_="prompt", limit=50)
    )
    assert {i["kind"] for i in prompts} == {"prompt"} and len(prompts) == 3
    notes, _ = store.read_sync(lambda c: feed.stream(c, visible_to=None, type_="note", limit=50))
    assert {i["kind"] for i in notes} == {"observation"}
    assert store.read_sync(lambda c: feed.stream(c, visible_to=None, project="/nope"))[0] == []


@pytest.mark.sqlite_only("the cursor's text form alone: a pure encode/decode, no database")
def test_cursor_text_round_trips_and_rejects_junk() -> None:
    assert feed.decode_cursor(feed.encode_cursor((T0, "prompt", 7))) == (T0, "prompt", 7)
    for junk in ("", "x", "1.table.2", "a.prompt.2", "1.prompt.-2", "1.prompt"):
        assert feed.decode_cursor(junk) is None


def test_retention_sample_is_even_and_bounded(backend_store: AnyStore) -> None:
    store = backend_store
    fill(store, [T0] * 300)
    rows = store.read_sync(lambda c: feed.retention_inputs(c, "observations", 10))
    assert 5 <= len(rows) <= 20
    assert {(r[0], r[3], r[4]) for r in rows} == {(2, "note", T0)}  # importance, type, anchor
    memories = store.read_sync(lambda c: feed.retention_inputs(c, "memories", 1000))
    assert len(memories) == 100 and {r[4] for r in memories} == {T0}
    assert store.read_sync(lambda c: feed.embedding_coverage(c))["summary"] == {
        "embedded": 0,
        "total": 1,
    }
