"""observations.insert_many writes the keyword index itself (migrations 9 and 11): the rows it
writes must be exactly what the m002 triggers write, and every other insert path keeps the
trigger. The tests on `backend_store` run on a SQLite file and on a real PostgreSQL database
alike (conftest), the module's SQL written once: inserts and their answers, repeated events,
pages, and who sees rows private to their author (store/privacy.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from worker.store import Store, migrations, projects, sessions, sql_terms
from worker.store import observations as q
from worker.store.db import as_db
from worker.store.migrations import MIGRATIONS
from worker.store.pg import PgStore
from worker.store.rows import VALUES_CHUNK
from worker.store.sql_terms import batch_indexing
from worker.terms import index_text

AnyStore = Store | PgStore
INDEX_COLUMNS = "rowid, title, body, scope, kind, item_id, project_id"


def _index_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return [
        tuple(r) for r in conn.execute(f"SELECT {INDEX_COLUMNS} FROM search_index ORDER BY rowid")
    ]


def _items(n: int) -> list[dict[str, Any]]:
    return [
        {
            "project": f"/repo/{i % 2}",
            "session_id": f"s{i % 3}",
            "type": "file_write" if i % 2 else "note",
            "title": f"Fix getUserById in parser_{i}",
            "body": f"Le funzioni del modulo {i} were refactored; café naïve résumé",
            "files": [f"src/auth/user_{i}.py", "README.md"],
            "event_id": f"ev-{i}",
        }
        for i in range(n)
    ]


def test_batch_index_rows_equal_what_the_triggers_write(store: Store) -> None:
    store.write_sync(lambda c: q.insert_many(c, _items(7)))
    batch_rows = store.read_sync(_index_rows)
    assert len(batch_rows) == 7

    def reindex(conn: sqlite3.Connection) -> None:
        # The m002 update trigger deletes and re-inserts each row's index entry.
        conn.execute("UPDATE observations SET title = title")

    store.write_sync(reindex)
    assert store.read_sync(_index_rows) == batch_rows


def test_other_insert_paths_still_index_through_the_trigger(store: Store) -> None:
    store.write_sync(lambda c: q.insert_many(c, _items(1)))

    def raw_insert(conn: sqlite3.Connection) -> int:
        cur = conn.execute(
            "INSERT INTO observations(project_id, type, title, body, files, content_hash, "
            "importance, created_at) SELECT project_id, 'note', 'parseConfigFile twice', '', "
            "'[]', 'h', 2, 1 FROM observations LIMIT 1"
        )
        return int(cur.lastrowid or 0)

    new_id = store.write_sync(raw_insert)
    row = store.read_sync(
        lambda c: c.execute(
            "SELECT title FROM search_index WHERE rowid = ?", (new_id * 8 + 1,)
        ).fetchone()
    )
    assert row is not None and row[0] == index_text("parseConfigFile twice")


def _switch(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT auto FROM index_switch").fetchone()[0])


def test_the_trigger_is_switched_back_on_when_a_batch_fails(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*texts: object) -> str:
        raise RuntimeError("analysis failed")  # after the rows went in, trigger off

    monkeypatch.setattr(q, "index_text", failing)
    with pytest.raises(RuntimeError):
        store.write_sync(lambda c: q.insert_many(c, _items(2)))
    monkeypatch.undo()
    assert store.read_sync(_switch) == 1
    assert store.read_sync(_index_rows) == []  # the failed batch left nothing behind
    assert (
        store.read_sync(lambda c: c.execute("SELECT COUNT(*) FROM observations").fetchone())[0] == 0
    )
    test_other_insert_paths_still_index_through_the_trigger(store)


def test_the_switch_is_off_only_inside_the_writers_transaction(store: Store) -> None:
    seen: list[int] = []

    def peek(conn: sqlite3.Connection) -> None:
        with batch_indexing(conn):
            seen.append(_switch(conn))
            seen.append(store.read_sync(_switch))  # another connection

    store.write_sync(peek)
    assert seen == [0, 1]
    assert store.read_sync(_switch) == 1
    with (
        pytest.raises(RuntimeError, match="transaction"),
        batch_indexing(store._writer),  # type: ignore[arg-type]
    ):
        pass


def test_batches_larger_than_one_statement_keep_order_ids_and_index(store: Store) -> None:
    items = _items(VALUES_CHUNK * 2 + 7)
    results = store.write_sync(lambda c: q.insert_many(c, items))
    ids = [row["id"] for row, _ in results]
    assert ids == list(range(ids[0], ids[0] + len(items)))
    titles = store.read_sync(
        lambda c: [r[0] for r in c.execute("SELECT title FROM observations ORDER BY id")]
    )
    assert titles == [item["title"] for item in items]
    batch_rows = store.read_sync(_index_rows)
    assert len(batch_rows) == len(items)
    store.write_sync(lambda c: c.execute("UPDATE observations SET title = title"))
    assert store.read_sync(_index_rows) == batch_rows  # what the triggers write


def test_known_sessions_are_left_as_they_are(backend_store: AnyStore) -> None:
    def start(conn: Any) -> None:
        pid = projects.ensure(conn, "/repo/0")
        sessions.ensure(conn, "s0", pid, cwd="/repo/0", source="startup")

    backend_store.write_sync(start)
    backend_store.write_sync(lambda c: q.insert_many(c, _items(3)))
    got = backend_store.read_sync(
        lambda c: c.execute("SELECT id, cwd, source, status FROM sessions ORDER BY id").fetchall()
    )
    assert [tuple(r) for r in got] == [
        ("s0", "/repo/0", "startup", "active"),
        ("s1", None, None, "active"),
        ("s2", None, None, "active"),
    ]


def test_repeated_event_ids_are_not_indexed_twice(store: Store) -> None:
    items = _items(3)
    first = store.write_sync(lambda c: q.insert_many(c, items))
    again = store.write_sync(lambda c: q.insert_many(c, [*items, dict(items[0])]))
    assert [created for _, created in first] == [True, True, True]
    assert [created for _, created in again] == [False, False, False, False]
    assert [row["id"] for row, _ in again][:3] == [row["id"] for row, _ in first]
    assert len(store.read_sync(_index_rows)) == 3


def _varied_items() -> list[dict[str, Any]]:
    base = _items(6)
    base[0]["meta"] = {"n": 1.5, "nested": {"list": [1, "two", None, True]}, "é": "ü"}
    base[1].pop("session_id")
    base[1].pop("files")
    base[2]["body"] = ""
    base[2]["importance"] = 5
    base[2]["tool_name"] = "Edit"
    base[3]["created_at_ms"] = 1_700_000_000_123
    base[4]["meta"] = {}
    base[5].pop("event_id")
    base[5]["files"] = []
    return base


def test_insert_answers_exactly_the_rows_read_back(backend_store: AnyStore) -> None:
    """New rows are answered from the values written, not read back: they must be equal."""
    items = _varied_items()
    results = backend_store.write_sync(lambda c: q.insert_many(c, items))
    assert all(created for _, created in results)
    answered = [row for row, _ in results]
    read_back = backend_store.read_sync(lambda c: q.get_many(c, [row["id"] for row in answered]))
    assert answered == read_back
    assert answered[3]["created_at"] == "2023-11-14T22:13:20.123Z"


def test_repeats_answer_the_stored_rows(backend_store: AnyStore) -> None:
    """A repeated event id (in an earlier call or earlier in the same batch) answers the row
    stored for it, equal to a fresh read."""
    first = backend_store.write_sync(lambda c: q.insert_many(c, _items(2)))
    again = _items(3)
    again.insert(1, dict(again[2]))  # ev-0, ev-2, ev-1, ev-2: ev-2 twice in one batch
    results = backend_store.write_sync(lambda c: q.insert_many(c, again))
    assert [created for _, created in results] == [False, True, False, False]
    assert results[0][0] == first[0][0] and results[2][0] == first[1][0]
    assert results[3][0] == results[1][0]
    ids = [row["id"] for row, _ in results]
    assert [row for row, _ in results] == backend_store.read_sync(lambda c: q.get_many(c, ids))


def test_a_database_from_before_migration_11_upgrades_and_keeps_indexing(tmp_path: Path) -> None:
    """A database at migration 10 (trigger switched by the Python function) with rows in it:
    opening it applies 11, and both insert paths then index exactly once."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    sql_terms.register(conn)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    old_steps = [step for step in MIGRATIONS if step[0] <= 10]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(migrations, "MIGRATIONS", old_steps)
        migrations.apply_migrations(conn)
    conn.execute("INSERT INTO projects(key, name, created_at) VALUES ('/repo/old', 'old', 1)")
    conn.execute(
        "INSERT INTO observations(project_id, type, title, body, files, content_hash, "
        "importance, created_at) VALUES (1, 'note', 'legacyParser row', '', '[]', 'h', 2, 1)"
    )
    conn.close()

    upgraded = Store(path)
    upgraded.open()
    try:
        assert upgraded.read_sync(_switch) == 1
        upgraded.write_sync(lambda c: q.insert_many(c, _items(3)))
        rows = upgraded.read_sync(_index_rows)
        assert len(rows) == 4  # the old row (indexed by the old trigger) and three new ones
        assert rows[0][1] == index_text("legacyParser row")
        test_other_insert_paths_still_index_through_the_trigger(upgraded)
    finally:
        upgraded.close()


def test_a_page_filters_newest_first_and_pages_by_id(backend_store: AnyStore) -> None:
    items = _items(6)
    items[4]["created_at_ms"] = 1_700_000_000_000
    backend_store.write_sync(lambda c: q.insert_many(c, items))

    def page(**query: Any) -> tuple[list[str], int | None]:
        rows, cursor = backend_store.read_sync(
            lambda c: q.list_page(c, q.ObservationQuery(**query))
        )
        return [r["title"][-8:] for r in rows], cursor

    assert page(limit=2)[0] == ["parser_5", "parser_4"]
    first, cursor = page(project="/repo/1", limit=2)
    assert first == ["parser_5", "parser_3"]
    assert page(project="/repo/1", before_id=cursor) == (["parser_1"], None)
    assert page(session_id="s0")[0] == ["parser_3", "parser_0"]
    assert page(type_="note", project="/repo/0")[0] == ["parser_4", "parser_2", "parser_0"]
    assert page(until=1_700_000_000_001)[0] == ["parser_4"]
    assert page(since=1_700_000_000_001)[0] == ["parser_5", "parser_3", "parser_2", "parser_1",
                                                 "parser_0"]  # fmt: skip
    assert page(project="/repo/none") == ([], None)
    one = backend_store.read_sync(lambda c: q.get(c, 1))
    assert one is not None and one["files"] == ["src/auth/user_0.py", "README.md"]
    assert backend_store.read_sync(lambda c: q.get(c, 999)) is None


def test_a_reader_sees_shared_observations_and_their_own(backend_store: AnyStore) -> None:
    """On a team database tool observations are private to their author unless shared."""
    items = _items(4)
    items[0]["author"] = "ann@example.com"
    items[1]["author"] = "bob@example.com"
    items[2] |= {"author": "bob@example.com", "shared": True}
    items[3].pop("session_id")  # no author at all: nobody's
    backend_store.write_sync(lambda c: q.insert_many(c, items))

    def visible(reader: str | None) -> list[str]:
        rows, _ = backend_store.read_sync(
            lambda c: q.list_page(c, q.ObservationQuery(visible_to=reader))
        )
        return [r["title"][-8:] for r in rows]

    assert visible("ann@example.com") == ["parser_2", "parser_0"]
    assert visible("bob@example.com") == ["parser_2", "parser_1"]
    assert visible("eve@example.com") == ["parser_2"]
    assert visible(None) == ["parser_3", "parser_2", "parser_1", "parser_0"]  # no filter


def test_ids_go_on_after_a_batch_whichever_path_inserts(backend_store: AnyStore) -> None:
    """A batch chooses its ids itself; a row inserted another way (an import, a single
    insert) still gets a fresh one, and the next batch goes on after it."""
    first = backend_store.write_sync(lambda c: q.insert_many(c, _items(3)))

    def insert_one(conn: Any) -> int:
        db = as_db(conn)
        pid = projects.ensure(db, "/repo/0")
        return db.insert(
            "INSERT INTO observations(project_id, type, title, content_hash, created_at) "
            "VALUES (?, 'note', 'by hand', 'h', 1)",
            (pid,),
        )

    other = backend_store.write_sync(insert_one)
    assert other > max(row["id"] for row, _ in first)
    after = backend_store.write_sync(lambda c: q.insert_many(c, [_items(5)[4]]))
    assert after[0][0]["id"] == other + 1
