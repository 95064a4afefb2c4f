"""observations.insert_many writes the keyword index itself (migration 9): the rows it writes
must be exactly what the m002 triggers write, and every other insert path keeps the trigger."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from worker.store import Store
from worker.store import observations as q
from worker.store.terms import SQL_AUTO_INDEX, index_text

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


def test_the_trigger_is_switched_back_on_when_a_batch_fails(store: Store) -> None:
    bad = _items(2)
    bad[1]["title"] = None  # fails after the first row went in

    with pytest.raises(AttributeError):
        store.write_sync(lambda c: q.insert_many(c, bad))
    assert store.write_sync(lambda c: c.execute(f"SELECT {SQL_AUTO_INDEX}()").fetchone()[0]) == 1
    assert store.read_sync(_index_rows) == []  # the failed batch left nothing behind


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


def test_insert_answers_exactly_the_rows_read_back(store: Store) -> None:
    """New rows are answered from the values written, not read back: they must be equal."""
    items = _varied_items()
    results = store.write_sync(lambda c: q.insert_many(c, items))
    assert all(created for _, created in results)
    answered = [row for row, _ in results]
    read_back = store.read_sync(lambda c: q.get_many(c, [row["id"] for row in answered]))
    assert answered == read_back
    assert answered[3]["created_at"] == "2023-11-14T22:13:20.123Z"


def test_repeats_answer_the_stored_rows(store: Store) -> None:
    """A repeated event id (in an earlier call or earlier in the same batch) answers the row
    stored for it, equal to a fresh read."""
    first = store.write_sync(lambda c: q.insert_many(c, _items(2)))
    again = _items(3)
    again.insert(1, dict(again[2]))  # ev-0, ev-2, ev-1, ev-2: ev-2 twice in one batch
    results = store.write_sync(lambda c: q.insert_many(c, again))
    assert [created for _, created in results] == [False, True, False, False]
    assert results[0][0] == first[0][0] and results[2][0] == first[1][0]
    assert results[3][0] == results[1][0]
    ids = [row["id"] for row, _ in results]
    assert [row for row, _ in results] == store.read_sync(lambda c: q.get_many(c, ids))
