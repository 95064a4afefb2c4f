"""The summaries and checkpoints store modules on both databases: each test runs on a SQLite file
and on a real PostgreSQL database (`backend_store`, conftest), the SQL written once."""

from __future__ import annotations

from typing import Any

from worker.store import Store, checkpoints, projects, sessions, summaries
from worker.store import observations as obs
from worker.store.pg import PgStore

AnyStore = Store | PgStore
APP = "github.com/acme/app"


def start(store: AnyStore, session_id: str, author: str | None = "ann@example.com") -> int:
    def write(conn: Any) -> int:
        pid = projects.ensure(conn, APP)
        sessions.ensure(conn, session_id, pid, author=author, started_at=1_000)
        return pid

    return store.write_sync(write)


def summarise(store: AnyStore, pid: int, request: str, **lists: list[str]) -> tuple[Any, bool]:
    fields: dict[str, Any] = {"completed": [], "files": [], "learned": [], "next_steps": []}
    return store.write_sync(
        lambda c: summaries.upsert(c, "s-1", pid, request=request, **(fields | lists), at=5_000)
    )


def test_a_summary_is_written_once_per_session_and_rewritten(backend_store: AnyStore) -> None:
    pid = start(backend_store, "s-1")
    first, created = summarise(
        backend_store,
        pid,
        "Fix the flaky test",
        completed=["found the race", "  fixed   it "],
        learned=["the pool closes early"],
        files=["tests/test_pool.py"],
    )
    assert created and first["author"] == "ann@example.com"  # the session's author
    assert first["completed"] == ["found the race", "fixed it"]
    assert (first["project"], first["files"]) == (APP, ["tests/test_pool.py"])
    again, created = backend_store.write_sync(
        lambda c: summaries.upsert(
            c,
            "s-1",
            pid,
            request="Fix the flaky test, then the docs",
            completed=["all"],
            files=[],
            learned=[],
            next_steps=["release"],
            meta={"turns": 3},
            at=9_000,
        )
    )
    assert not created and again["id"] == first["id"]
    assert (again["request"], again["next_steps"], again["meta"]) == (
        "Fix the flaky test, then the docs",
        ["release"],
        {"turns": 3},
    )
    assert again["created_at"] == first["created_at"] != again["updated_at"]
    assert backend_store.read_sync(lambda c: summaries.get(c, "s-1")) == again
    written = backend_store.read_sync(lambda c: summaries.as_written(c, "s-1"))
    assert written is not None and written["completed"] == "all"
    assert backend_store.read_sync(lambda c: summaries.get(c, "s-none")) is None


def test_session_activity_lists_prompts_and_lean_observations(backend_store: AnyStore) -> None:
    pid = start(backend_store, "s-1")

    def write(conn: Any) -> None:
        sessions.add_prompt(conn, "s-1", pid, "run the tests", 2_000)
        base = {"project": APP, "session_id": "s-1"}
        obs.insert_many(
            conn,
            [
                base | {"type": "command", "title": "pytest", "body": "2 failed",
                        "meta": {"exit": 1}, "created_at_ms": 3_000},
                base | {"type": "file_write", "title": "Edit pool.py", "body": "long diff",
                        "files": ["pool.py"], "created_at_ms": 2_500},
            ],
        )  # fmt: skip

    backend_store.write_sync(write)
    activity = backend_store.read_sync(
        lambda c: summaries.session_activity(c, "s-1", visible_to=None)
    )
    assert activity is not None
    assert activity["session"]["project_id"] == pid
    assert [p["text"] for p in activity["prompts"]] == ["run the tests"]
    seen = [(o["title"], o["body"], o["meta"], o["files"]) for o in activity["observations"]]
    assert seen == [  # oldest first; bodies and meta of commands only
        ("Edit pool.py", "", None, ["pool.py"]),
        ("pytest", "2 failed", {"exit": 1}, []),
    ]
    assert (
        backend_store.read_sync(lambda c: summaries.session_activity(c, "s-none", visible_to=None))
        is None
    )


def test_checkpoints_keep_the_latest_and_skip_a_repeat(backend_store: AnyStore) -> None:
    pid = start(backend_store, "s-1")

    def checkpoint(task: str, at: int, **lists: list[str]) -> tuple[dict[str, Any], bool]:
        fields: dict[str, Any] = {"progress": [], "next_steps": [], "open_questions": []}
        return backend_store.write_sync(
            lambda c: checkpoints.insert(
                c, "s-1", pid, trigger="stop", task=task, files=["a.py"], at=at,
                **(fields | lists),
            )
        )  # fmt: skip

    first, created = checkpoint("port the store", 2_000, progress=["sessions"])
    assert created and first["author"] == "ann@example.com" and first["files"] == ["a.py"]
    same, created = checkpoint("port the store", 3_000, progress=[" sessions "])
    assert not created and same == first  # nothing new: the latest stands
    second, created = checkpoint("port the store", 4_000, progress=["sessions", "observations"])
    assert created and second["id"] != first["id"]
    assert backend_store.read_sync(lambda c: checkpoints.latest(c, "s-1")) == second
    assert backend_store.read_sync(lambda c: checkpoints.get(c, first["id"])) == first
    listed = backend_store.read_sync(lambda c: checkpoints.of_session(c, "s-1", 10))
    assert [c["id"] for c in listed] == [second["id"], first["id"]]
    written = backend_store.read_sync(lambda c: checkpoints.latest_as_written(c, "s-1"))
    assert written is not None and written["progress"] == "sessions\nobservations"
    assert backend_store.read_sync(lambda c: checkpoints.latest(c, "s-none")) is None
