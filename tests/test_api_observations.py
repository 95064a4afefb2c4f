"""Observations API: create one / batch, idempotency, list filters + cursor, get one / many,
and the bad-input matrix (always the JSON error shape, never a 500)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from worker.api.observations import create_schema
from worker.ops.fields import observation_schema as item_schema
from worker.settings import Settings

pytestmark = pytest.mark.both_backends

JSON = {"Content-Type": "application/json"}


def obs(title: str, **extra: Any) -> dict[str, Any]:
    return {"project": "/repo/a", "type": "command", "title": title, **extra}


def test_create_returns_the_stored_item_with_its_id(client: TestClient) -> None:
    r = client.post(
        "/api/observations",
        json=obs(
            "pytest -q",
            body="2 failed",
            files=["src/a.py"],
            tool_name="Bash",
            importance=4,
            created_at="2026-01-02T03:04:05Z",
            meta={"exit": 1, "nested": {"ok": [1, "two", None]}},
            session_id="s1",
            unknown_future_field={"ignored": True},
        ),
    )
    assert r.status_code == 201
    item = r.json()
    assert isinstance(item["id"], int) and item["duplicate"] is False
    assert item["created_at"] == "2026-01-02T03:04:05.000Z"
    assert item["meta"] == {"exit": 1, "nested": {"ok": [1, "two", None]}}
    assert item["files"] == ["src/a.py"] and item["importance"] == 4
    assert "unknown_future_field" not in item
    assert client.get(f"/api/observations/{item['id']}").json()["meta"] == item["meta"]
    # The session was created on the fly, in the same project.
    assert client.get("/api/sessions/s1").json()["project"] == "/repo/a"


def test_text_is_stored_verbatim(client: TestClient) -> None:
    title = "<script>alert('x')</script> \u00e9\u4e2d\U0001f600 \"quotes\" \\ back"
    body = "line1\r\nline2\ttab  \u200b zero-width"
    created = client.post("/api/observations", json=obs(title, body=body)).json()
    stored = client.get(f"/api/observations/{created['id']}").json()
    assert stored["title"] == title and stored["body"] == body


def test_batch_with_duplicates_inside_and_across_requests(client: TestClient) -> None:
    first = client.post("/api/observations", json={"observations": [obs("a", event_id="e1")]})
    assert first.status_code == 201
    batch = [
        obs("a again", event_id="e1"),
        obs("b", event_id="e2"),
        obs("b dup", event_id="e2"),
        obs("c"),
    ]
    r = client.post("/api/observations", json={"observations": batch})
    assert r.status_code == 201
    data = r.json()
    assert data["created"] == 2 and data["duplicates"] == 2
    ids = [item["id"] for item in data["items"]]
    assert ids[0] == first.json()["items"][0]["id"] and ids[1] == ids[2]
    assert [i["title"] for i in data["items"]] == ["a", "b", "b", "c"]
    # All duplicates: 200, nothing created.
    again = client.post("/api/observations", json={"observations": batch[:2]})
    assert again.status_code == 200 and again.json()["created"] == 0


def test_a_bad_item_rejects_the_whole_batch(client: TestClient) -> None:
    r = client.post(
        "/api/observations",
        json={"observations": [obs("ok"), {"project": "p", "type": "bogus", "title": "t"}]},
    )
    assert r.status_code == 400 and r.json()["error"]["field"] == "observations[1].type"
    assert client.get("/api/observations").json()["items"] == []


def test_list_filters_and_cursor(client: TestClient) -> None:
    for i in range(7):
        client.post(
            "/api/observations",
            json=obs(f"a{i}", type="note" if i % 2 else "command", session_id="s1"),
        )
    client.post("/api/observations", json={"project": "/repo/b", "type": "note", "title": "other"})
    page = client.get("/api/observations", params={"project": "/repo/a", "limit": 3}).json()
    assert [o["title"] for o in page["items"]] == ["a6", "a5", "a4"]
    rest = client.get(
        "/api/observations",
        params={"project": "/repo/a", "limit": 10, "cursor": page["next_cursor"]},
    ).json()
    assert [o["title"] for o in rest["items"]] == ["a3", "a2", "a1", "a0"] and rest[
        "next_cursor"
    ] is None
    notes = client.get("/api/observations", params={"type": "note", "project": "/repo/a"}).json()[
        "items"
    ]
    assert {o["title"] for o in notes} == {"a1", "a3", "a5"}
    assert client.get("/api/observations", params={"project": "/nowhere"}).json()["items"] == []
    assert len(client.get("/api/observations", params={"session_id": "s1"}).json()["items"]) == 7
    future = client.get("/api/observations", params={"since": "2999-01-01T00:00:00Z"}).json()[
        "items"
    ]
    past = client.get("/api/observations", params={"until": "2000-01-01T00:00:00Z"}).json()["items"]
    assert future == [] and past == []


def test_get_many_by_ids_keeps_the_requested_order(client: TestClient) -> None:
    ids = [client.post("/api/observations", json=obs(f"t{i}")).json()["id"] for i in range(3)]
    wanted = [ids[2], 999999, ids[0]]
    got = client.get("/api/observations", params={"ids": ",".join(map(str, wanted))}).json()[
        "items"
    ]
    assert [o["id"] for o in got] == [ids[2], ids[0]]


def test_the_body_schema_checks_every_item_rule_so_a_single_post_is_fully_validated(
    settings: Settings,
) -> None:
    """A single observation is validated by the body schema, then only for required fields:
    that is complete only while the body schema holds every item property with its rules."""
    single, body = item_schema(settings), create_schema(settings)
    assert set(single) == {"type", "required", "properties"}
    assert {k: body["properties"][k] for k in single["properties"]} == single["properties"]
    assert "required" not in body


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"type": "note", "title": "t"}, "project", "'project' is required"),
        ({"project": "p", "title": "t", "type": None}, "type", "must be string"),
        ({"project": "p", "type": "note"}, "title", "'title' is required"),
        ({"project": "p", "type": "note", "title": "x" * 10**6}, "title", "characters"),
        ({"project": "p", "type": "bogus"}, "type", "must be one of"),
    ],
)
def test_a_single_post_names_the_first_bad_field(
    client: TestClient, body: dict[str, Any], field: str, message: str
) -> None:
    r = client.post("/api/observations", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["field"] == field and message in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("POST", "/api/observations", b"", 400, "body"),
        ("POST", "/api/observations", b"{", 400, "body"),
        ("POST", "/api/observations", b"\xff\xfe{}", 400, "body"),
        (
            "POST",
            "/api/observations",
            b'{"project":"p","type":"note","title":"\\ud800"}',
            400,
            "title",
        ),
        (
            "POST",
            "/api/observations",
            b'{"project":"p","type":"note","title":"t","importance":NaN}',
            400,
            "body",
        ),
        (
            "POST",
            "/api/observations",
            b'{"project":"p","type":"note","title":"t","meta":{"x":1e999}}',
            400,
            "body",
        ),
        (
            "POST",
            "/api/observations",
            b'{"project":"p","type":"note","title":"t","importance":1e5}',
            400,
            "importance",
        ),
        ("POST", "/api/observations", b'{"project":"p","type":"note"}', 400, "title"),
        (
            "POST",
            "/api/observations",
            b'{"project":"p","type":"note","title":"t","files":"a.py"}',
            400,
            "files",
        ),
        (
            "POST",
            "/api/observations",
            b'{"project":"p","type":"note","title":"t","created_at":"soon"}',
            400,
            "created_at",
        ),
        ("POST", "/api/observations", b"[]", 400, "body"),
        ("POST", "/api/observations", b'{"observations":[]}', 400, "observations"),
        ("POST", "/api/observations", b'{"observations":"x"}', 400, "observations"),
        ("POST", "/api/observations", b"[" * 50000, 400, "body"),
        ("GET", "/api/observations?limit=0", None, 400, "limit"),
        ("GET", "/api/observations?limit=99999", None, 400, "limit"),
        ("GET", "/api/observations?type=bogus", None, 400, "type"),
        ("GET", "/api/observations?ids=1,x", None, 400, "ids"),
        ("GET", "/api/observations?cursor=%C2%B2", None, 400, "cursor"),
        ("GET", "/api/observations?since=tomorrow", None, 400, "since"),
        ("GET", "/api/observations?project=a%00b", None, 400, "project"),
        ("GET", "/api/observations/424242", None, 404, "id"),
        ("GET", "/api/observations/99999999999999999999999", None, 404, "id"),
        ("GET", "/api/observations/abc", None, 404, None),
        ("PUT", "/api/observations", None, 405, None),
        ("GET", "/api/nothing-here", None, 404, None),
    ],
)
def test_bad_input_gets_the_json_error_shape(
    client: TestClient, method: str, path: str, body: bytes | None, status: int, field: str | None
) -> None:
    r = client.request(method, path, content=body, headers=JSON if body is not None else {})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) <= {"code", "message", "field"} and error["message"]
    assert error.get("field") == field
    assert "Traceback" not in r.text
