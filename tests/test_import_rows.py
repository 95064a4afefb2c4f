"""Imported rows meet the live API's rules (400 naming line and field, nothing stored), and the
readers tolerate a bad value already stored (200 everywhere, logged once per field)."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.backends import opened_store, rows, value
from worker.cli import main
from worker.settings import Settings
from worker.store import Store
from worker.store import rows as store_rows

pytestmark = pytest.mark.both_backends

PROJECT = "/home/dev/shop"


def record(client: TestClient) -> None:
    """One of each row the readers show: session (with plan), prompt, observation, memory."""
    client.post("/api/sessions", json={"session_id": "s-1", "project": PROJECT})
    client.post("/api/prompts", json={"session_id": "s-1", "text": "Migrate the orders table"})
    client.put(
        "/api/sessions/s-1/plan", json={"plan": [{"content": "migrate", "status": "pending"}]}
    )
    for title in ("Run alembic upgrade for orders", "Edit migrations/orders.py"):
        obs = {"project": PROJECT, "session_id": "s-1", "type": "command", "title": title,
               "body": "alembic upgrade head", "files": ["migrations/orders.py"],
               "meta": {"exit_code": 0}}  # fmt: skip
        assert client.post("/api/observations", json=obs).status_code == 201
    memory = {"project": PROJECT, "kind": "decision", "pinned": True,
              "content": "Orders migrations run through alembic", "tags": ["db"]}  # fmt: skip
    assert client.post("/api/memories", json=memory).status_code == 201


def export_lines(client: TestClient) -> list[str]:
    r = client.get("/api/export")
    assert r.status_code == 200
    return [line for line in r.text.split("\n") if line]


TABLES_SQL = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    "postgres": "SELECT table_name FROM information_schema.tables"
    " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
}


def table_counts(settings: Settings) -> dict[str, int]:
    """Rows per table of the configured database (the home's file, or the team database)."""
    with opened_store(settings) as store:
        names = [r[0] for r in rows(store, TABLES_SQL[store.backend])]
        return {n: value(store, f'SELECT COUNT(*) FROM "{n}"') for n in names}


# (table, column, stored value) for each kind of bad row.
BAD_ROWS = [
    ("observations", "meta", "{not json"),
    ("observations", "meta", "[1, 2]"),  # JSON, but not an object
    ("observations", "files", "[broken"),
    ("observations", "files", '{"a": 1}'),
    ("observations", "files", "[1]"),
    ("observations", "type", "bogus"),
    ("observations", "created_at", "yesterday"),
    ("observations", "importance", "high"),
    ("observations", "title", 42),
    ("memories", "kind", "weird"),
    ("memories", "tags", "nope"),
    ("memories", "updated_at", 1.5),
    ("memories", "meta", "NaN"),
    ("sessions", "started_at", "soon"),
    ("sessions", "status", "paused"),
    ("sessions", "plan", "{bad"),
    ("prompts", "number", "one"),
    ("prompts", "meta", 7),
    ("kv", "value", "{x"),
]


def corrupt(lines: list[str], table: str, column: str, value: Any) -> tuple[list[str], int]:
    """The export with `column` of the last `table` row set to `value`, and that line's number."""
    index = max(i for i, line in enumerate(lines) if json.loads(line).get("table") == table)
    item = json.loads(lines[index])
    item["row"][column] = value
    return [*lines[:index], json.dumps(item), *lines[index + 1 :]], index + 1


@pytest.mark.parametrize(("table", "column", "value"), BAD_ROWS)
def test_a_bad_row_fails_the_whole_import_naming_line_and_field(
    client: TestClient,
    settings: Settings,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    column: str,
    value: Any,
) -> None:
    record(client)
    lines, number = corrupt(export_lines(client), table, column, value)
    # Into the same home with replace (every other row would be rewritten) ...
    before = table_counts(settings)
    r = client.post("/api/import?on_conflict=replace", content="\n".join(lines).encode())
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    # The field is the column, or a part of its JSON value (`files[0]`).
    assert error["line"] == number and error["field"].startswith(column), error
    assert error["message"].startswith(f"line {number}: table '{table}': '{column}"), error
    assert table_counts(settings) == before
    # ... and through `cairn import --direct` into another home: nothing written. On SQLite that
    # home's file stays empty; on a team database (CAIRN_DATABASE_URL set) the import goes into
    # the same database, whose rows stay as they were.
    export = tmp_path / "bad.jsonl"
    export.write_text("\n".join(lines) + "\n")
    empty = dataclasses.replace(settings, home=tmp_path / "empty-home")
    expected = before if backend == "postgres" else table_counts(empty)
    monkeypatch.setenv("CAIRN_HOME", str(empty.home))
    assert main(["import", str(export), "--direct", "--quiet"]) == 1
    after = table_counts(empty)
    assert after == expected
    assert backend == "postgres" or (after["observations"], after["projects"]) == (0, 0)


def test_a_clean_export_still_imports(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(client)
    export = tmp_path / "good.jsonl"
    export.write_text("\n".join(export_lines(client)) + "\n")
    monkeypatch.setenv("CAIRN_HOME", str(tmp_path / "other-home"))
    assert main(["import", str(export), "--direct", "--quiet"]) == 0


def store_bad_values(settings: Settings) -> None:
    """Bad values written straight into the database, as an older import could leave them."""
    statements = [
        "UPDATE observations SET meta = '{not json', files = '[broken'",
        "UPDATE observations SET created_at = 'yesterday' WHERE id = 1",
        "UPDATE observations SET type = 'bogus' WHERE id = 2",
        "UPDATE memories SET tags = 'nope', meta = '[1]', updated_at = 'x'",
        "UPDATE sessions SET plan = '{bad', meta = '{x', started_at = 'z'",
        "UPDATE prompts SET meta = '{x'",
    ]
    store = Store(settings.db_path)
    store.open()
    try:
        store.write_sync(lambda c: [c.execute(sql) for sql in statements])
    finally:
        store.close()


READS: list[tuple[str, Callable[[Any], bool]]] = [
    (f"/api/observations?project={PROJECT}", lambda b: len(b["items"]) == 2),
    ("/api/observations?ids=1,2", lambda b: len(b["items"]) == 2),
    (f"/api/search?q=alembic&project={PROJECT}", lambda b: len(b["hits"]) >= 2),
    (
        f"/api/context?project={PROJECT}",
        lambda b: "Orders migrations run through alembic" in b["text"],
    ),
    (f"/api/context/preview?project={PROJECT}&query=alembic+orders", lambda b: b["text"]),
    (f"/api/memories?project={PROJECT}", lambda b: b["items"][0]["tags"] == []),
    ("/api/sessions", lambda b: b["items"]),
    ("/api/sessions/s-1", lambda b: b["plan"] is None),
    (f"/api/timeline?project={PROJECT}", lambda b: b["before"]),
    (f"/api/report?project={PROJECT}", lambda b: b),
    ("/api/projects", lambda b: b),
]
PAGES = ["/", "/memories", "/sessions", "/sessions/s-1", "/search?q=alembic", "/stats"]


@pytest.mark.sqlite_only("SQLite keeps any value in any column; PostgreSQL's typed columns refuse")
def test_readers_tolerate_bad_stored_values_and_log_each_field_once(
    client: TestClient,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_rows, "_reported", set())  # what earlier tests reported is forgotten
    record(client)
    store_bad_values(settings)
    caplog.set_level(logging.WARNING, logger="worker.store.rows")
    for _ in range(2):
        for path, expected in READS:
            r = client.get(path)
            assert r.status_code == 200, (path, r.text)
            assert expected(r.json()), (path, r.json())
        for page in PAGES:
            assert client.get(page).status_code == 200, page
    reported = [r.getMessage() for r in caplog.records if r.name == "worker.store.rows"]
    assert reported, "the bad values were not reported"
    assert len(reported) == len(set(reported))  # once per field, not once per row or request
    assert any("observations.meta is not valid JSON" in m for m in reported)
    assert any("memories.tags is not valid JSON" in m for m in reported)
    assert any("memories.meta is not a JSON object" in m for m in reported)
