"""The store refuses in its own terms (worker/store/errors.py); the app answers each refusal with
the HTTP status, code and message the API has always given, over HTTP and in the spool's replay.
Every case here makes the store refuse for real: a held lock, a capped file, a closed store, a
damaged file, a bad or clashing import."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.api.direct import DirectDispatch
from worker.app import STORE_ERRORS, create_app
from worker.settings import Settings, load_settings
from worker.store.errors import StoreError

pytestmark = pytest.mark.both_backends


def observation(n: int, text: str = "") -> dict[str, Any]:
    return {"project": "/repo", "type": "note", "title": f"note {n}", "body": text}


def replayed(client: TestClient, method: str, path: str, body: Any) -> tuple[int, Any]:
    """The same request as the spool replays it (worker/api/direct.py)."""
    dispatch = client.app_state["cairn"].spool.direct
    assert isinstance(dispatch, DirectDispatch)
    return client.portal.call(dispatch, method, path, body)  # type: ignore[union-attr]


@pytest.fixture
def app_with(isolated_home: Any) -> Iterator[Any]:
    """`app_with(**settings)`: an authenticated client over an app with those settings."""
    clients: list[TestClient] = []

    def make(**overrides: object) -> TestClient:
        settings = load_settings(**overrides)
        client = TestClient(create_app(settings), base_url=BASE_URL, raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        client.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.mark.sqlite_only("no database: the error classes against their answers' table")
def test_every_kind_of_store_error_has_an_http_answer() -> None:
    assert set(StoreError.__subclasses__()) == set(STORE_ERRORS)


@pytest.mark.sqlite_only("a SQLite write lock held by another connection")
def test_a_held_write_lock_answers_503_busy(app_with: Any, settings: Settings) -> None:
    client = app_with(busy_timeout_ms=100)
    other = sqlite3.connect(settings.db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        r = client.post("/api/observations", json=observation(1))
        status, answer = replayed(client, "POST", "/api/observations", observation(2))
    finally:
        other.close()
    busy = {
        "error": {
            "code": "unavailable",
            "message": "the database is busy (another process holds a write lock); retry shortly",
        }
    }
    assert (r.status_code, r.json()) == (503, busy)
    assert (status, answer) == (503, busy)  # the spool keeps the event and retries


@pytest.mark.sqlite_only("the cap is SQLite's max_page_count on the database file")
def test_a_full_database_answers_507(app_with: Any) -> None:
    client = app_with(max_db_bytes=1)  # capped at the size it has: it cannot grow
    for n in range(200):
        r = client.post("/api/observations", json=observation(n, "word " * 15_000))
        if r.status_code != 201:
            break
    full = "the disk is full: the database cannot grow; free space and retry"
    assert (r.status_code, r.json()) == (
        507,
        {"error": {"code": "insufficient_storage", "message": full}},
    )
    status, answer = replayed(client, "POST", "/api/observations", observation(999, "x " * 40_000))
    assert (status, answer["error"]["code"]) == (507, "insufficient_storage")


def test_a_closed_store_answers_503(client: TestClient) -> None:
    client.app_state["cairn"].store.close()
    r = client.post("/api/observations", json=observation(1))
    closed = "the store is closed (the worker is shutting down)"
    assert (r.status_code, r.json()) == (503, {"error": {"code": "unavailable", "message": closed}})
    assert replayed(client, "POST", "/api/observations", observation(2))[0] == 503


@pytest.mark.sqlite_only("a damaged SQLite file")
def test_a_damaged_file_answers_503_and_says_to_restart(
    client: TestClient, settings: Settings
) -> None:
    # Closed, the store keeps no page cached to hide the damage; reads open a fresh connection.
    client.app_state["cairn"].store.close()
    with settings.db_path.open("r+b") as db:
        db.seek(4096)  # keep the header and schema page; zero the table pages
        db.write(b"\0" * (settings.db_path.stat().st_size - 4096))
    r = client.get("/api/observations", params={"project": "/repo"})
    assert r.status_code == 503, r.text
    assert r.json()["error"] == {
        "code": "unavailable",
        "message": "the database file is damaged; restart the worker (it moves the file aside)",
    }


def _export(client: TestClient) -> list[str]:
    r = client.get("/api/export")
    assert r.status_code == 200
    return [line for line in r.text.split("\n") if line.strip()]


def test_a_malformed_import_line_answers_400_naming_it(client: TestClient) -> None:
    header = _export(client)[0]
    bad = json.dumps({"table": "nope", "row": {}})
    r = client.post("/api/import", content=f"{header}\n{bad}\n".encode())
    assert (r.status_code, r.json()) == (
        400,
        {
            "error": {
                "code": "bad_request",
                "message": "line 2: unknown table 'nope'",
                "field": "body",
            }
        },
    )


def test_a_clashing_import_answers_409(client: TestClient) -> None:
    assert client.post("/api/observations", json=observation(1)).status_code == 201
    lines = _export(client)
    changed = [
        line.replace('"title":"note 1"', '"title":"note one"') if '"observations"' in line else line
        for line in lines
    ]
    assert changed != lines
    r = client.post("/api/import", content="\n".join(changed).encode())
    assert r.status_code == 409, r.text
    error = r.json()["error"]
    assert error["code"] == "conflict" and error["field"] == "body"
    assert "differs from the stored one" in error["message"]
