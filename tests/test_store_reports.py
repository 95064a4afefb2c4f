"""The report's and the project profile's store reads (store/reports.py, store/profiles.py and
the kv cache) on both databases: each test runs on a SQLite file and on a real PostgreSQL
database (`backend_store`, conftest), the SQL written once."""

from __future__ import annotations

from typing import Any

from worker.memory.profile import refresh_profile
from worker.settings import Settings
from worker.store import Store, memories, observations, profiles, projects, sessions, summaries
from worker.store.pg import PgStore
from worker.store.reports import report_rows, resolve_project

AnyStore = Store | PgStore
ROOT = "github.com/acme/shop"
DAY = 86_400_000
T0 = 1_750_000_000_000


def populate(store: AnyStore) -> int:
    """One session of a project: a prompt, file writes, a passing test run, a summary and a
    decision; a second project with one session."""

    def write(conn: Any) -> int:
        pid = projects.ensure(conn, ROOT)
        sessions.ensure(conn, "s-1", pid, author="ann@example.com", started_at=T0)
        sessions.add_prompt(conn, "s-1", pid, "Speed up the checkout", T0 + 10)
        base = {"project": ROOT, "session_id": "s-1"}
        observations.insert_many(
            conn,
            [
                {**base, "type": "file_write", "title": "Edit", "files": ["src/cart.py"]},
                {**base, "type": "file_write", "title": "Edit", "files": ["src/cart.py", "a.ts"]},
                {
                    **base,
                    "type": "command",
                    "title": "$ pytest",
                    "body": "exit code: 0",
                    "meta": {"exit_code": 0},
                },
            ],
        )
        conn.execute("UPDATE observations SET created_at = ?", (T0 + 20,))
        summaries.upsert(
            conn,
            "s-1",
            pid,
            request="Speed up the checkout",
            completed=["cached prices"],
            files=["src/cart.py"],
            learned=["prices are read twice"],
            next_steps=["profile"],
            at=T0 + 30,
        )
        memories.insert_row(
            conn,
            pid,
            {
                "kind": "decision",
                "content": "Cache prices in Redis",
                "importance": 5,
                "created_at_ms": T0 + 40,
            },
        )
        other = projects.ensure(conn, "/home/bob/tools")
        sessions.ensure(conn, "s-2", other, started_at=T0 + 50)
        return pid

    return store.write_sync(write)


def test_report_rows_for_a_project_and_for_all(backend_store: AnyStore) -> None:
    pid = populate(backend_store)
    rows = backend_store.read_sync(
        lambda c: report_rows(c, pid, T0 - DAY, T0 + DAY, visible_to=None)
    )
    assert [s["id"] for s in rows["sessions"]] == ["s-1"]
    session = rows["sessions"][0]
    assert (session["prompts"], session["observations"]) == (1, 3)
    assert session["next_steps"] == ["profile"] and session["project_key"] == ROOT
    assert [(f["file"], f["changes"]) for f in rows["file_changes"]] == [
        ("src/cart.py", 2),
        ("a.ts", 1),
    ]
    assert rows["observation_types"] == {"file_write": 2, "command": 1}
    assert rows["prompt_count"] == 1
    assert rows["learned"][0]["items"] == ["prices are read twice"]
    assert [m["content"] for m in rows["memories"]] == ["Cache prices in Redis"]
    everything = backend_store.read_sync(
        lambda c: report_rows(c, None, T0 - DAY, T0 + DAY, visible_to=None)
    )
    assert [s["id"] for s in everything["sessions"]] == ["s-1", "s-2"]
    later = backend_store.read_sync(
        lambda c: report_rows(c, pid, T0 + DAY, T0 + 2 * DAY, visible_to=None)
    )
    assert later["sessions"] == [] and later["file_changes"] == [] and later["prompt_count"] == 0


def test_resolve_project_by_key_or_name(backend_store: AnyStore) -> None:
    pid = populate(backend_store)
    by_key = backend_store.read_sync(lambda c: resolve_project(c, ROOT))
    assert [r["id"] for r in by_key] == [pid]
    by_name = backend_store.read_sync(lambda c: resolve_project(c, "tools/"))
    assert [r["key"] for r in by_name] == ["/home/bob/tools"]
    assert backend_store.read_sync(lambda c: resolve_project(c, "nope")) == []


def test_profile_is_built_cached_and_invalidated(
    backend_store: AnyStore, settings: Settings
) -> None:
    pid = populate(backend_store)
    first = backend_store.write_sync(lambda c: refresh_profile(c, pid, settings, reader=None))
    assert first is not None and first["cached"] is False
    assert "Python" in str(first["static"]) and "Cache prices in Redis" in str(first["static"])
    assert "Speed up the checkout" in str(first["dynamic"])
    again = backend_store.write_sync(lambda c: refresh_profile(c, pid, settings, reader=None))
    assert again is not None and again["cached"] is True and again["static"] == first["static"]
    backend_store.write_sync(lambda c: profiles.invalidate(c, pid))
    fresh = backend_store.write_sync(lambda c: refresh_profile(c, pid, settings, reader=None))
    assert fresh is not None and fresh["cached"] is False
    missing = backend_store.write_sync(lambda c: refresh_profile(c, 999, settings, reader=None))
    assert missing is None
