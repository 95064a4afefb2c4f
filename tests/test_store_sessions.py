"""The sessions store module (sessions and their prompts) on both databases: each test runs on a
SQLite file and on a real PostgreSQL database (`backend_store`, conftest), the SQL written once."""

from __future__ import annotations

from typing import Any

from worker.store import Store, observations, projects, sessions
from worker.store.pg import PgStore

AnyStore = Store | PgStore
APP = "github.com/acme/app"


def start(store: AnyStore, session_id: str, **fields: Any) -> bool:
    def write(conn: Any) -> bool:
        return sessions.ensure(conn, session_id, projects.ensure(conn, APP), **fields)

    return store.write_sync(write)


def prompt(store: AnyStore, session_id: str, text: str, **fields: Any) -> dict[str, Any]:
    def write(conn: Any) -> dict[str, Any]:
        pid = projects.ensure(conn, APP)
        return sessions.add_prompt(conn, session_id, pid, text, fields.pop("at", None), **fields)

    return store.write_sync(write)


def test_a_session_is_created_once_then_resumed(backend_store: AnyStore) -> None:
    assert start(
        backend_store,
        "s-1",
        cwd="/home/ann/app",
        source="startup",
        started_at=1_700_000_000_000,
        meta={"model": "m"},
    )
    assert not start(backend_store, "s-1", source="resume", author="ann@example.com")
    row = backend_store.read_sync(lambda c: sessions.get(c, "s-1"))
    assert row is not None
    assert (row["project"], row["project_name"], row["cwd"]) == (APP, "app", "/home/ann/app")
    assert (row["source"], row["status"], row["meta"]) == ("resume", "active", {"model": "m"})
    assert row["started_at"] == "2023-11-14T22:13:20.000Z"
    # A session made without an author takes the first one named, and keeps it.
    assert row["author"] == "ann@example.com"
    start(backend_store, "s-1", author="bob@example.com")
    assert backend_store.read_sync(lambda c: sessions.get(c, "s-1"))["author"] == "ann@example.com"  # type: ignore[index]
    assert backend_store.read_sync(lambda c: sessions.get(c, "s-none")) is None


def test_a_start_that_arrives_after_the_session_s_first_rows_still_names_its_agent(
    backend_store: AnyStore,
) -> None:
    def bare(conn: Any) -> None:  # what a prompt arriving first makes (the start was spooled)
        sessions.ensure_many(conn, {"s-late": projects.ensure(conn, APP)})

    backend_store.write_sync(bare)
    assert not start(backend_store, "s-late", source="startup", meta={"source": "codex"})
    row = backend_store.read_sync(lambda c: sessions.get(c, "s-late"))
    assert row is not None and row["meta"] == {"source": "codex"}
    start(backend_store, "s-late", meta={"source": "gemini"})  # a known agent stays
    row = backend_store.read_sync(lambda c: sessions.get(c, "s-late"))
    assert row is not None and row["meta"] == {"source": "codex"}


def test_end_plan_and_last_activity(backend_store: AnyStore) -> None:
    start(backend_store, "s-1", started_at=1_000_000)
    prompt(backend_store, "s-1", "first", at=5_000_000)
    assert backend_store.write_sync(lambda c: sessions.end(c, "s-1", "exit", 3_000_000))
    assert not backend_store.write_sync(lambda c: sessions.end(c, "s-none", "exit", None))
    backend_store.write_sync(lambda c: sessions.set_plan(c, "s-1", [{"step": "write tests"}]))
    row = backend_store.read_sync(lambda c: sessions.get(c, "s-1"))
    assert row is not None
    assert (row["status"], row["end_reason"], row["duration_seconds"]) == ("ended", "exit", 2000.0)
    assert row["plan"] == [{"step": "write tests"}]
    assert (row["prompt_count"], row["observation_count"]) == (1, 0)
    # The latest of start, end and its prompts' times.
    assert row["last_activity_at"] == "1970-01-01T01:23:20.000Z"


def test_prompts_are_numbered_per_session_with_their_author(backend_store: AnyStore) -> None:
    start(backend_store, "s-1")
    start(backend_store, "s-2")
    one = prompt(backend_store, "s-1", "fix the flaky test", author="ann@example.com")
    prompt(backend_store, "s-2", "elsewhere")
    two = prompt(backend_store, "s-1", "now the docs", meta={"chars": 12})
    assert (one["number"], two["number"]) == (1, 2)
    assert one["author"] == "ann@example.com" and two["author"] is None
    assert (one["project"], one["session_id"], two["meta"]) == (APP, "s-1", {"chars": 12})
    assert two["id"] != one["id"]
    assert backend_store.read_sync(lambda c: sessions.get_prompt(c, one["id"])) == one
    listed = backend_store.read_sync(lambda c: sessions.prompts_of(c, "s-1"))
    assert listed == [one, two]
    assert backend_store.read_sync(lambda c: sessions.prompts_of(c, "s-1", 1)) == [one]


def test_many_sessions_at_once_leave_known_ones_alone(backend_store: AnyStore) -> None:
    start(backend_store, "s-known", author="ann@example.com")

    def write(conn: Any) -> None:
        pid = projects.ensure(conn, APP)
        other = projects.ensure(conn, "github.com/acme/other")
        sessions.ensure_many(
            conn,
            {"s-known": other, "s-new": other, "s-bare": pid},
            {"s-known": "bob@example.com", "s-new": "bob@example.com"},
        )

    backend_store.write_sync(write)
    found = backend_store.read_sync(lambda c: sessions.authors(c, ["s-new", "s-known", "s-x"]))
    assert found == {"s-known": "ann@example.com", "s-new": "bob@example.com"}
    new = backend_store.read_sync(lambda c: sessions.get(c, "s-new"))
    assert new is not None and new["project"] == "github.com/acme/other"
    bare = backend_store.read_sync(lambda c: sessions.get(c, "s-bare"))
    assert bare is not None and bare["author"] is None and bare["status"] == "active"


def test_a_page_filters_and_pages_newest_first(backend_store: AnyStore) -> None:
    for i in range(5):
        start(backend_store, f"s-{i}", started_at=1_000_000 + i * 1000)
    start(backend_store, "s-same", started_at=1_004_000)  # same start as s-4: ordered by id
    backend_store.write_sync(lambda c: sessions.end(c, "s-1", None, None))

    def page(**query: Any) -> tuple[list[str], str | None]:
        args: dict[str, Any] = {"project": None, "status": None, "before": None, "limit": 10}
        args["visible_to"] = None
        rows, cursor = backend_store.read_sync(lambda c: sessions.list_page(c, **(args | query)))
        return [r["id"] for r in rows], cursor

    first, cursor = page(limit=3)
    assert first == ["s-same", "s-4", "s-3"] and cursor == "1003000:s-3"
    assert page(before=cursor) == (["s-2", "s-1", "s-0"], None)
    assert page(status="ended") == (["s-1"], None)
    assert page(project=APP, limit=1)[0] == ["s-same"]
    assert page(project="github.com/acme/none") == ([], None)


def test_a_reader_sees_shared_prompts_and_their_own(backend_store: AnyStore) -> None:
    """On a team database prompts are private to their author unless shared."""
    start(backend_store, "s-1")
    prompt(backend_store, "s-1", "ann's draft", author="ann@example.com")
    prompt(backend_store, "s-1", "bob's question", author="bob@example.com")
    prompt(backend_store, "s-1", "bob's shared note", author="bob@example.com", shared=True)
    prompt(backend_store, "s-1", "from before authors")

    def visible(reader: str | None) -> list[str]:
        rows = backend_store.read_sync(lambda c: sessions.prompts_of(c, "s-1", visible_to=reader))
        return [r["text"] for r in rows]

    assert visible("ann@example.com") == ["ann's draft", "bob's shared note"]
    assert visible("bob@example.com") == ["bob's question", "bob's shared note"]
    assert visible("eve@example.com") == ["bob's shared note"]
    assert len(visible(None)) == 4  # no filter


def test_the_session_at_work_is_the_one_open_and_recently_active(backend_store: AnyStore) -> None:
    now = 10_000_000_000
    window = 30 * 60_000  # CAIRN_SESSION_IDLE_MINUTES' default

    def working(at: int = now, author: str | None = None) -> str | None:
        def read(conn: Any) -> str | None:
            return sessions.working_session(conn, projects.ensure(conn, APP), at, window, author)

        return backend_store.write_sync(read)

    assert working() is None  # nothing at work yet
    start(backend_store, "s-old", started_at=now - 3 * window, author="ann@example.com")
    assert working() is None  # open, but quiet for longer than the window
    prompt(backend_store, "s-old", "pick the retry policy", at=now - window // 2)
    assert working() == "s-old"  # its prompt is recent
    assert working(author="ann@example.com") == "s-old"
    assert working(author="bob@example.com") is None  # another author's agent (team database)

    def tool_call(conn: Any) -> None:
        observations.insert(
            conn,
            {
                "project": APP,
                "session_id": "s-new",
                "type": "command",
                "title": "Run: pytest",
                "body": "",
                "created_at_ms": now - 360_000,
            },
        )

    start(backend_store, "s-new", started_at=now - 2 * window)
    backend_store.write_sync(tool_call)
    assert working() is None  # two at work: a memory saved now could be either's
    assert backend_store.write_sync(lambda c: sessions.end(c, "s-old", "exit", now - 60_000))
    assert working() == "s-new"  # the other one ended
    assert working(at=now + 2 * window) is None  # and went quiet since
