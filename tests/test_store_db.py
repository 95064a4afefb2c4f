"""The store's database edge on SQLite: the Store's connections are the Db, with its dialect."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from worker.store import Store, projects
from worker.store.db import SQLITE, SqliteDb, as_db, same_value


def test_the_stores_connections_are_sqlite_dbs(store: Store) -> None:
    conn = store.write_sync(lambda c: c)
    assert isinstance(conn, SqliteDb) and as_db(conn) is conn
    assert conn.dialect is SQLITE and not conn.native_vectors
    first = store.write_sync(
        lambda c: as_db(c).insert(
            "INSERT INTO projects(key, name, created_at) VALUES (?, ?, ?)", ("/a", "a", 1)
        )
    )
    second = store.write_sync(lambda c: projects.ensure(c, "/b"))
    assert second == first + 1  # the id of the new row, as `INSERT ... RETURNING id` gives
    assert store.read_sync(lambda c: projects.find(c, "/a")) == first


def test_a_plain_sqlite_connection_is_refused_with_what_to_do(tmp_path: Path) -> None:
    plain = sqlite3.connect(tmp_path / "x.db")
    try:
        with pytest.raises(TypeError, match=r"factory=worker\.store\.db\.SqliteDb"):
            as_db(plain)
    finally:
        plain.close()


def test_same_value_matches_null_to_null_with_an_indexable_form() -> None:
    assert same_value("m.project_id", None) == ("m.project_id IS NULL", ())
    assert same_value("m.project_id", 7) == ("m.project_id = ?", (7,))
