"""Sessions and prompts API: start/resume, end, list + cursor, detail, numbered prompts."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

pytestmark = pytest.mark.both_backends


def start(client: TestClient, sid: str, **extra: object) -> dict[str, object]:
    r = client.post("/api/sessions", json={"session_id": sid, "project": "/repo", **extra})
    assert r.status_code in (200, 201), r.text
    return r.json()  # type: ignore[no-any-return]


def test_start_is_idempotent_and_resume_reactivates(client: TestClient) -> None:
    first = client.post(
        "/api/sessions",
        json={"session_id": "s1", "project": "/repo", "source": "startup", "cwd": "/repo"},
    )
    assert first.status_code == 201 and first.json()["created"] is True
    assert first.json()["status"] == "active" and first.json()["project_name"] == "repo"
    ended = client.post("/api/sessions/s1/end", json={"reason": "exit"})
    assert ended.status_code == 200 and ended.json()["status"] == "ended"
    assert ended.json()["end_reason"] == "exit" and ended.json()["duration_seconds"] >= 0
    resumed = client.post(
        "/api/sessions", json={"session_id": "s1", "project": "/repo", "source": "resume"}
    )
    assert resumed.status_code == 200 and resumed.json()["created"] is False
    assert resumed.json()["status"] == "active" and resumed.json()["source"] == "resume"


def test_end_without_body_and_unknown_session(client: TestClient) -> None:
    start(client, "s2")
    assert client.post("/api/sessions/s2/end").status_code == 200
    missing = client.post("/api/sessions/nope/end", json={})
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "session_id"
    assert client.get("/api/sessions/nope").status_code == 404


def test_prompts_are_numbered_and_idempotent(client: TestClient) -> None:
    start(client, "s3")
    a = client.post("/api/prompts", json={"session_id": "s3", "text": "first", "event_id": "p1"})
    b = client.post("/api/prompts", json={"session_id": "s3", "text": "second"})
    again = client.post(
        "/api/prompts", json={"session_id": "s3", "text": "first", "event_id": "p1"}
    )
    assert (a.status_code, b.status_code, again.status_code) == (201, 201, 200)
    assert [a.json()["number"], b.json()["number"]] == [1, 2]
    assert again.json()["id"] == a.json()["id"] and again.json()["duplicate"] is True


def test_prompt_for_an_unknown_session_needs_a_project(client: TestClient) -> None:
    r = client.post("/api/prompts", json={"session_id": "new", "text": "hi"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "project"
    ok = client.post("/api/prompts", json={"session_id": "new", "text": "hi", "project": "/repo"})
    assert ok.status_code == 201 and ok.json()["number"] == 1


def test_detail_has_prompts_observations_summary(client: TestClient) -> None:
    start(client, "s4")
    client.post("/api/prompts", json={"session_id": "s4", "text": "do it"})
    for i in range(3):
        client.post(
            "/api/observations",
            json={"project": "/repo", "session_id": "s4", "type": "command", "title": f"c{i}"},
        )
    saved = client.post(
        "/api/memories", json={"project": "/repo", "kind": "fact", "content": "c2 needs c1"}
    ).json()
    detail = client.get("/api/sessions/s4").json()
    assert [m["id"] for m in detail["memories"]] == [saved["id"]]  # saved while s4 worked
    assert [p["text"] for p in detail["prompts"]] == ["do it"]
    assert [o["title"] for o in detail["observations"]] == ["c0", "c1", "c2"]  # oldest first
    assert detail["prompt_count"] == 1 and detail["observation_count"] == 3
    assert "summary" in detail and "checkpoint" in detail


def test_list_newest_first_with_cursor_and_filters(client: TestClient) -> None:
    for i in range(5):
        start(client, f"L{i}", started_at=f"2026-01-0{i + 1}T00:00:00Z")
    client.post("/api/sessions/L0/end")
    page = client.get("/api/sessions", params={"limit": 2}).json()
    assert [s["id"] for s in page["items"]] == ["L4", "L3"]
    rest = client.get("/api/sessions", params={"limit": 10, "cursor": page["next_cursor"]}).json()
    assert [s["id"] for s in rest["items"]] == ["L2", "L1", "L0"]
    ended = client.get("/api/sessions", params={"status": "ended"}).json()["items"]
    assert [s["id"] for s in ended] == ["L0"]
    assert client.get("/api/sessions", params={"project": "/other"}).json()["items"] == []


def test_session_ids_with_odd_characters_round_trip(client: TestClient) -> None:
    sid = "weird id:with?query#hash é"
    start(client, sid)
    from urllib.parse import quote

    r = client.get("/api/sessions/" + quote(sid, safe=""))
    assert r.status_code == 200 and r.json()["id"] == sid


def test_bad_session_input(client: TestClient) -> None:
    cases = [
        ({"project": "/repo"}, "session_id"),
        ({"session_id": "", "project": "/repo"}, "session_id"),
        ({"session_id": "x" * 201, "project": "/repo"}, "session_id"),
        ({"session_id": "s", "project": "/repo", "started_at": "nope"}, "started_at"),
        ({"session_id": "s", "project": "/repo", "meta": "x"}, "meta"),
    ]
    for body, field in cases:
        r = client.post("/api/sessions", json=body)
        assert r.status_code == 400 and r.json()["error"]["field"] == field, (body, r.text)
    assert (
        client.get("/api/sessions", params={"status": "paused"}).json()["error"]["field"]
        == "status"
    )


def test_session_ids_containing_slashes_reach_every_session_route(client: TestClient) -> None:
    """An agent may name sessions 'team/alpha/42': every /api/sessions/{id}... route finds it,
    whether the client encodes the slashes or not, and a suffix is never read as part of it."""
    sid = "team/alpha/42"
    start(client, sid)
    for path in ("/api/sessions/team/alpha/42", "/api/sessions/team%2Falpha%2F42"):
        detail = client.get(path)
        assert detail.status_code == 200 and detail.json()["id"] == sid, path
    summary = client.get("/api/sessions/team/alpha/42/summary")
    assert summary.status_code == 404
    assert "session 'team/alpha/42' has no summary yet" in summary.json()["error"]["message"]
    ended = client.post("/api/sessions/team/alpha/42/end", json={"reason": "exit"})
    assert ended.status_code == 200 and ended.json()["id"] == sid
    assert client.get("/api/sessions/team/alpha").status_code == 404


def test_each_session_names_its_agent_and_the_list_filters_by_it(client: TestClient) -> None:
    start(client, "cc-1", meta={"source": "claude-code"})
    start(client, "cx-1", meta={"source": "codex", "model": "gpt-5.5"})
    start(client, "gm-1", meta={"source": "gemini"})
    start(client, "none-1")  # no hook named one (a script, an older import)
    start(client, "odd-1", meta={"source": "a-new-editor"})
    every = {s["id"]: s["agent"] for s in client.get("/api/sessions").json()["items"]}
    assert every == {
        "cc-1": "claude-code",
        "cx-1": "codex",
        "gm-1": "gemini",
        "none-1": None,
        "odd-1": None,
    }
    codex = client.get("/api/sessions", params={"agent": "codex"}).json()["items"]
    assert [s["id"] for s in codex] == ["cx-1"]
    assert client.get("/api/sessions", params={"agent": "cursor"}).json()["items"] == []
    bad = client.get("/api/sessions", params={"agent": "vim"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "agent"
    assert client.get("/api/sessions/gm-1").json()["agent"] == "gemini"
