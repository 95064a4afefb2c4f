"""Requests the worker replays itself (spool, import batches) go straight into their endpoint:
the answer, status and error body are the ones the same request gets over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from worker.api.direct import DirectDispatch

pytestmark = pytest.mark.both_backends


def direct(client: TestClient) -> DirectDispatch:
    dispatch = client.app_state["cairn"].spool.direct
    assert isinstance(dispatch, DirectDispatch)
    return dispatch


def both(client: TestClient, method: str, path: str, body: Any) -> tuple[Any, Any]:
    """The same request over HTTP, then directly."""
    over_http = client.request(method, path, json=body)
    status, answer = client.portal.call(direct(client), method, path, body)  # type: ignore[union-attr]
    return (over_http.status_code, over_http.json()), (status, answer)


def obs(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "project": "/repo",
        "session_id": "s1",
        "type": "command",
        "title": f"make test {n}",
        "event_id": f"e{n}",
        **extra,
    }


def strip(answer: Any) -> Any:
    if isinstance(answer, dict):
        return {k: strip(v) for k, v in answer.items() if k not in ("id", "created_at", "items")}
    return answer


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/observations", {"project": "/repo", "type": "nonsense", "title": "x"}),
        ("POST", "/api/observations", {"observations": [obs(1), {"title": 3}]}),
        ("POST", "/api/sessions/nope/summarize", {}),
        ("POST", "/api/prompts", {"session_id": "new", "text": "hi"}),
        ("POST", "/api/not-a-route", {"a": 1}),
        ("PUT", "/api/sessions/s1/plan", {"tasks": "not a list"}),
    ],
)
def test_refusals_are_the_same(client: TestClient, method: str, path: str, body: Any) -> None:
    over_http, straight = both(client, method, path, body)
    assert straight[0] == over_http[0] and straight[0] >= 400
    if path != "/api/not-a-route":
        assert straight[1] == over_http[1]


def test_stores_and_recognises_duplicates_as_over_http(client: TestClient) -> None:
    status, answer = client.portal.call(direct(client), "POST", "/api/observations", obs(1))  # type: ignore[union-attr]
    assert status == 201 and answer["duplicate"] is False and answer["title"] == "make test 1"
    again = client.post("/api/observations", json=obs(1))
    assert again.status_code == 200 and again.json()["duplicate"] is True
    status, answer = client.portal.call(direct(client), "POST", "/api/observations", obs(1))  # type: ignore[union-attr]
    assert status == 200 and strip(answer) == strip(again.json())
    batch = {"observations": [obs(2), obs(3), obs(1)]}
    status, answer = client.portal.call(direct(client), "POST", "/api/observations", batch)  # type: ignore[union-attr]
    assert status == 201 and (answer["created"], answer["duplicates"]) == (2, 1)
    listed = client.get("/api/observations?session_id=s1").json()["items"]
    assert sorted(i["title"] for i in listed) == ["make test 1", "make test 2", "make test 3"]


def test_the_answer_is_plain_json_data(client: TestClient) -> None:
    body = {"session_id": "s9", "project": "/repo", "text": "fix it", "event_id": "p9"}
    status, answer = client.portal.call(direct(client), "POST", "/api/prompts", body)  # type: ignore[union-attr]
    assert status == 201 and answer["number"] == 1
    assert json.loads(json.dumps(answer)) == answer  # what the replay reads: no Response object
