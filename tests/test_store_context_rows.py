"""worker/store/context_rows.py on both backends: the rows the session-start context is built
from, and the record of what a session was given."""

from __future__ import annotations

from typing import Any

from worker.store import (
    Store,
    checkpoints,
    context_rows,
    memories,
    observations,
    projects,
    sessions,
    summaries,
)
from worker.store.pg import PgStore

T0 = 1_700_000_000_000


def _project(store: Store | PgStore) -> int:
    def write(c: Any) -> int:
        pid = projects.ensure(c, "/repo")
        projects.ensure(c, "/other")
        for sid, project in (("s1", pid), ("s2", pid)):
            sessions.ensure(c, sid, project)
        for i in range(5):
            observations.insert(
                c,
                {
                    "project": "/repo",
                    "session_id": "s1",
                    "type": "file_write",
                    "title": f"edit {i}",
                    "body": "",
                    "files": ["src/app.py", *(["src/db.py"] if i % 2 else [])],
                    "created_at_ms": T0 + i,
                },
            )
        observations.insert(
            c, {"project": "/other", "type": "file_write", "title": "x", "files": ["other.py"]}
        )
        for content, extra in (
            ("pinned low", {"pinned": True, "importance": 1}),
            ("important", {"importance": 5}),
            ("unimportant", {"importance": 2}),
            ("global and important", {"importance": 4, "scope": "global"}),
            ("archived but important", {"importance": 5}),
        ):
            item = {"kind": "decision", "content": content, "project": "/repo", **extra}
            if item.get("scope") == "global":
                del item["project"]
            memories.insert(c, item)
        c.execute("UPDATE memories SET archived_at = 1 WHERE content = 'archived but important'")
        for sid, request, at in (("s1", "older", T0), ("s2", "newer", T0 + 10)):
            summaries.upsert(
                c, sid, pid, request=request, completed=[], files=[], learned=[],
                next_steps=[], at=at,
            )  # fmt: skip
        for sid, task, at in (("s1", "first", T0), ("s2", "second", T0 + 5)):
            checkpoints.insert(
                c, sid, pid, trigger="stop", task=task, progress=[], next_steps=[],
                open_questions=[], files=[], at=at,
            )  # fmt: skip
        return pid

    return int(store.write_sync(write))


def test_start_rows_on_each_backend(backend_store: Store | PgStore) -> None:
    store = backend_store
    pid = _project(store)

    def read(c: Any) -> dict[str, Any]:
        return {
            "recent": [o["title"] for o in context_rows.recent_observations(c, pid, 3)],
            "core": [m["body"] for m in context_rows.core_memories(c, pid, 4, T0 * 2, 10)],
            "summary": (context_rows.latest_summary(c, pid) or {}).get("title"),
            "own": (context_rows.latest_checkpoint(c, pid, "s1") or {}).get("task"),
            "project": (context_rows.latest_checkpoint(c, pid, "nope") or {}).get("task"),
            "files": context_rows.top_files(c, pid, 5),
        }

    assert store.read_sync(read) == {
        "recent": ["edit 4", "edit 3", "edit 2"],
        "core": ["pinned low", "important", "global and important"],
        "summary": "newer",
        "own": "first",
        "project": "second",
        "files": [("src/app.py", 5), ("src/db.py", 2)],
    }


def test_injections_are_recorded_once_and_go_with_their_session(
    backend_store: Store | PgStore,
) -> None:
    store = backend_store
    pid = _project(store)
    refs = [("memory", 1), ("observation", 2)]
    for at in (T0, T0 + 1):  # the second time changes nothing
        store.write_sync(lambda c, at=at: context_rows.record_injections(c, "s1", refs, at))
    store.write_sync(lambda c: context_rows.record_injections(c, "s2", refs[:1], T0))
    assert store.read_sync(lambda c: context_rows.injected(c, "s1")) == set(refs)
    assert (
        store.read_sync(
            lambda c: c.execute(
                "SELECT injected_at FROM context_injections WHERE session_id = 's1'"
            ).fetchall()[0][0]
        )
        == T0
    )
    store.write_sync(lambda c: c.execute("DELETE FROM sessions WHERE id = 's1'"))
    assert store.read_sync(lambda c: context_rows.injected(c, "s1")) == set()
    assert store.read_sync(lambda c: context_rows.injected(c, "s2")) == {("memory", 1)}
    assert pid > 0
