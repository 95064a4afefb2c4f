"""The store's database edge: the Store's connections are the Db on SQLite, and the same SQL
reads and writes alike on SQLite and PostgreSQL (`backend_store`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from worker.store import Store, projects
from worker.store.db import SQLITE, SqliteDb, as_db, same_value
from worker.store.pg import PgStore


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


def test_the_edge_reads_and_writes_alike_on_both_databases(
    backend_store: Store | PgStore,
) -> None:
    def write(c: Any) -> int:
        db = as_db(c)
        db.executemany(
            "INSERT INTO received_events(event_id, kind, item_id, created_at) VALUES (?, ?, ?, ?)",
            [("e-1", "memory", "1", 1), ("e-2", "memory", "2", 2), ("e-3", "note", "3", 3)],
        )
        return db.insert(
            "INSERT INTO projects(key, name, created_at) VALUES (?, ?, ?)", ("50% it's?", "n", 1)
        )

    project_id = backend_store.write_sync(write)

    def read(c: Any) -> tuple[Any, ...]:
        db = as_db(c)
        # A literal `?` or `%` is text, a bare `?` a parameter, on both databases.
        row = db.execute(
            "SELECT id, key, '?' AS mark, '5%' AS pct FROM projects WHERE key = ? AND id = ?",
            ("50% it's?", project_id),
        ).fetchone()
        kinds = db.execute(
            f"SELECT kind, COUNT(*) AS n FROM received_events WHERE "
            f"{db.dialect.in_ids('created_at')} GROUP BY kind ORDER BY kind",
            (db.dialect.ids_parameter([1, 3]),),
        ).fetchall()
        return dict(row), row[1], [(k[0], k["n"]) for k in kinds]

    row, key, kinds = backend_store.read_sync(read)
    assert row == {"id": project_id, "key": "50% it's?", "mark": "?", "pct": "5%"}
    assert key == "50% it's?" and kinds == [("memory", 1), ("note", 1)]
