"""GET /api/timeline: items of every kind in time order around an anchor or a moment."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

pytestmark = pytest.mark.both_backends

PROJECT = "/work/repo-timeline"


def _obs(client: TestClient, title: str, minute: int, **extra: Any) -> int:
    body = {
        "project": PROJECT,
        "type": "note",
        "title": title,
        "created_at": f"2026-01-01T10:{minute:02d}:00Z",
        **extra,
    }
    response = client.post("/api/observations", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def test_before_anchor_after_in_time_order(client: TestClient) -> None:
    ids = [_obs(client, f"step {n}", n) for n in range(6)]
    _obs(client, "elsewhere", 3, project="/work/other")
    response = client.get("/api/timeline", params={"anchor_id": ids[3], "before": 2, "after": 1})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["project"] == PROJECT
    assert [i["title"] for i in data["before"]] == ["step 1", "step 2"]
    assert data["anchor"]["title"] == "step 3" and data["anchor"]["kind"] == "observation"
    assert [i["title"] for i in data["after"]] == ["step 4"]
    assert data["before"][0]["created_at"] == "2026-01-01T10:01:00.000Z"


def test_prompts_share_the_line_and_latest_without_anchor(client: TestClient) -> None:
    _obs(client, "first", 1, session_id="s-tl")
    client.post(
        "/api/prompts", json={"session_id": "s-tl", "project": PROJECT, "text": "now fix it"}
    )
    data = client.get("/api/timeline", params={"project": PROJECT, "before": 5}).json()
    assert data["anchor"] is None and data["after"] == []
    kinds = [i["kind"] for i in data["before"]]
    assert kinds[-1] == "prompt" and "observation" in kinds


def test_at_a_moment(client: TestClient) -> None:
    for n in range(4):
        _obs(client, f"m{n}", n * 10)
    data = client.get(
        "/api/timeline",
        params={"project": PROJECT, "at": "2026-01-01T10:15:00Z", "before": 1, "after": 1},
    ).json()
    assert [i["title"] for i in data["before"]] == ["m1"]
    assert [i["title"] for i in data["after"]] == ["m2"]


def test_errors_name_the_field(client: TestClient) -> None:
    missing = client.get("/api/timeline", params={"anchor_id": 424242})
    assert missing.status_code == 404
    assert missing.json()["error"]["field"] == "anchor_id"
    both = client.get("/api/timeline", params={"anchor_id": 1, "at": "2026-01-01T10:00:00Z"})
    assert both.status_code == 400 and both.json()["error"]["field"] == "at"
    wide = client.get("/api/timeline", params={"before": 1000})
    assert wide.status_code == 400 and wide.json()["error"]["field"] == "before"
    kind = client.get("/api/timeline", params={"anchor_kind": "planet", "anchor_id": 1})
    assert kind.status_code == 400 and kind.json()["error"]["field"] == "anchor_kind"


def test_each_item_names_its_agent_and_the_line_filters_by_it(client: TestClient) -> None:
    for sid, agent in (("s-gem", "gemini"), ("s-cop", "copilot")):
        body = {"session_id": sid, "project": PROJECT, "meta": {"source": agent}}
        assert client.post("/api/sessions", json=body).status_code == 201
    gemini = _obs(client, "by gemini", 1, session_id="s-gem")
    _obs(client, "by copilot", 2, session_id="s-cop")
    _obs(client, "by hand", 3)
    data = client.get("/api/timeline", params={"project": PROJECT}).json()
    assert [(i["title"], i["agent"]) for i in data["before"]] == [
        ("by gemini", "gemini"),
        ("by copilot", "copilot"),
        ("by hand", None),
    ]
    only = client.get("/api/timeline", params={"project": PROJECT, "agent": "gemini"}).json()
    assert [i["id"] for i in only["before"]] == [gemini]
    unknown = client.get("/api/timeline", params={"agent": "vim"})
    assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "agent"
