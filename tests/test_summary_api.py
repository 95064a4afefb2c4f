"""Session summary, checkpoint and plan endpoints over a real app and SQLite file."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

pytestmark = pytest.mark.both_backends

ROOT = "/home/dev/shop"
SID = "sess-summary-1"


def _start(client: TestClient, sid: str = SID) -> None:
    r = client.post("/api/sessions", json={"session_id": sid, "project": ROOT, "cwd": ROOT})
    assert r.status_code in (200, 201), r.text


def _obs(client: TestClient, sid: str, **item: Any) -> None:
    r = client.post("/api/observations", json={"project": ROOT, "session_id": sid, **item})
    assert r.status_code in (200, 201), r.text


def _busy_session(client: TestClient, sid: str = SID) -> None:
    _start(client, sid)
    for text in ("Add a discount code field to checkout", "yes", "also cover it with tests"):
        client.post("/api/prompts", json={"session_id": sid, "text": text})
    _obs(client, sid, type="research", title="Read checkout.py", files=[f"{ROOT}/src/checkout.py"])
    _obs(
        client,
        sid,
        type="file_write",
        title="Edit src/checkout.py",
        tool_name="Edit",
        files=[f"{ROOT}/src/checkout.py"],
    )
    _obs(
        client,
        sid,
        type="file_write",
        title="Edit src/checkout.py",
        tool_name="Edit",
        files=[f"{ROOT}/src/checkout.py"],
        body="second edit",
    )
    _obs(
        client,
        sid,
        type="file_write",
        title="Write tests/test_discount.py",
        tool_name="Write",
        files=[f"{ROOT}/tests/test_discount.py"],
    )
    _obs(client, sid, type="command", title="$ pytest -q", meta={"exit_code": 1})
    _obs(client, sid, type="command", title="$ pytest -q", meta={"exit_code": 0}, body="x")
    _obs(client, sid, type="command", title="$ npm run lint", meta={"exit_code": 2})


def test_summarize_builds_the_summary_from_the_session(client: TestClient) -> None:
    _busy_session(client)
    r = client.post(
        f"/api/sessions/{SID}/summarize",
        json={
            "last_assistant_message": (
                "I added the discount field. The root cause of the rounding bug was that "
                "prices are stored as floats.\n\nNext steps:\n- migrate prices to integer cents"
            )
        },
    )
    assert r.status_code == 201, r.text
    summary = r.json()
    assert summary["created"] is True
    assert summary["request"].splitlines() == [
        "Add a discount code field to checkout",
        "also cover it with tests",
    ]
    assert summary["files"] == ["src/checkout.py", "tests/test_discount.py"]
    assert "Ran `pytest -q` (succeeded)" in summary["completed"]
    assert "Edited src/checkout.py (2 changes)" in summary["completed"]
    assert "Wrote tests/test_discount.py" in summary["completed"]
    assert any("stored as floats" in item for item in summary["learned"])
    assert "migrate prices to integer cents" in summary["next_steps"]
    assert "Fix the failing `npm run lint` (exit 2)" in summary["next_steps"]
    # pytest failed first but then passed: not a next step
    assert not any("pytest" in step for step in summary["next_steps"])

    # the Stop warmed the project profile: the next read is served from the cache
    assert client.get(f"/api/profile?project={ROOT}").json()["cached"] is True
    got = client.get(f"/api/sessions/{SID}/summary").json()
    assert got["id"] == summary["id"] and got["files"] == summary["files"]
    detail = client.get(f"/api/sessions/{SID}").json()
    assert detail["summary"] is not None and detail["checkpoint"] is not None
    assert detail["checkpoint"]["trigger"] == "stop"


def test_summarize_again_updates_the_one_row(client: TestClient) -> None:
    _busy_session(client)
    first = client.post(f"/api/sessions/{SID}/summarize", json={}).json()
    _obs(
        client,
        SID,
        type="file_write",
        title="Edit README.md",
        tool_name="Edit",
        files=[f"{ROOT}/README.md"],
    )
    second = client.post(f"/api/sessions/{SID}/summarize").json()
    assert second["id"] == first["id"]
    assert second["created"] is False
    assert second["created_at"] == first["created_at"]
    assert "README.md" in second["files"]
    stats = client.get("/api/status").json()["counts"]
    assert stats["summaries"] == 1


def test_repeated_stop_without_new_work_adds_no_checkpoint(client: TestClient) -> None:
    _busy_session(client)
    client.post(f"/api/sessions/{SID}/summarize", json={"event_id": "stop-1"})
    first = client.get(f"/api/sessions/{SID}/checkpoint").json()
    client.post(f"/api/sessions/{SID}/summarize", json={"event_id": "stop-2"})
    again = client.get(f"/api/sessions/{SID}/checkpoint").json()
    assert again["id"] == first["id"]


def test_summarize_unknown_session_is_404(client: TestClient) -> None:
    r = client.post("/api/sessions/nope/summarize", json={})
    assert r.status_code == 404
    assert r.json()["error"]["field"] == "session_id"
    assert "nope" in r.json()["error"]["message"]
    assert client.get("/api/sessions/nope/summary").status_code == 404
    assert client.get("/api/sessions/nope/checkpoint").status_code == 404


def test_summary_missing_is_404_with_hint(client: TestClient) -> None:
    _start(client)
    r = client.get(f"/api/sessions/{SID}/summary")
    assert r.status_code == 404
    assert "no summary yet" in r.json()["error"]["message"]


def test_summarize_rejects_bad_body(client: TestClient) -> None:
    _start(client)
    r = client.post(f"/api/sessions/{SID}/summarize", json={"last_assistant_message": 5})
    assert r.status_code == 400
    assert r.json()["error"]["field"] == "last_assistant_message"
    r = client.post(
        f"/api/sessions/{SID}/summarize",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400


def test_checkpoint_captures_task_plan_and_files(client: TestClient) -> None:
    _busy_session(client)
    plan = [
        {"content": "Add discount field", "status": "completed", "activeForm": "Adding"},
        {"content": "Write discount tests", "status": "in_progress", "activeForm": "Writing"},
        {"content": "Update docs", "status": "pending", "activeForm": "Updating"},
    ]
    assert client.put(f"/api/sessions/{SID}/plan", json={"plan": plan}).status_code == 200
    client.post(
        "/api/prompts", json={"session_id": SID, "text": "Should the code be case sensitive?"}
    )
    r = client.post(
        f"/api/sessions/{SID}/checkpoint",
        json={"trigger": "auto", "custom_instructions": "keep the API notes", "event_id": "pc-1"},
    )
    assert r.status_code == 201, r.text
    cp = r.json()
    assert cp["trigger"] == "auto"
    assert cp["task"].startswith("Should the code be case sensitive?") or "case" in cp["task"]
    assert "In progress: Write discount tests" in cp["progress"]
    assert "Add discount field" in cp["progress"]
    assert cp["next_steps"][:2] == ["Continue: Write discount tests", "Update docs"]
    assert "Should the code be case sensitive?" in cp["open_questions"]
    assert cp["files"][0] == "tests/test_discount.py"  # most recent first
    assert set(cp["files"]) == {"tests/test_discount.py", "src/checkout.py"}
    assert cp["meta"] == {"custom_instructions": "keep the API notes"}
    # the same event again is acknowledged, not duplicated
    again = client.post(f"/api/sessions/{SID}/checkpoint", json={"event_id": "pc-1"})
    assert again.status_code == 200 and again.json()["id"] == cp["id"]
    assert client.get(f"/api/sessions/{SID}/checkpoint").json()["id"] == cp["id"]
    # new work, a new checkpoint: the history keeps both, newest first
    _obs(client, SID, type="file_write", title="Edit", tool_name="Edit", files=[f"{ROOT}/x.py"])
    later = client.post(f"/api/sessions/{SID}/checkpoint", json={"trigger": "manual"}).json()
    history = client.get(f"/api/sessions/{SID}/checkpoints").json()["items"]
    assert [c["id"] for c in history] == [later["id"], cp["id"]]
    assert (
        client.get(f"/api/sessions/{SID}/checkpoints?limit=1").json()["items"][0]["id"]
        == (later["id"])
    )
    assert client.get("/api/sessions/nope/checkpoints").status_code == 404


def test_plan_put_validates_and_creates_with_project(client: TestClient) -> None:
    r = client.put("/api/sessions/new-s/plan", json={"plan": []})
    assert r.status_code == 404
    r = client.put(
        "/api/sessions/new-s/plan",
        json={"plan": [{"content": "x", "status": "done"}], "project": ROOT},
    )
    assert r.status_code == 400
    assert r.json()["error"]["field"] == "plan[0].status"
    r = client.put(
        "/api/sessions/new-s/plan",
        json={"plan": [{"content": "ship it", "status": "pending", "junk": 1}], "project": ROOT},
    )
    assert r.status_code == 200, r.text
    assert r.json()["plan"] == [{"content": "ship it", "status": "pending"}]
    assert r.json()["project"] == ROOT


def _facts(client: TestClient) -> list[dict[str, Any]]:
    r = client.get("/api/memories", params={"project": ROOT, "kind": "fact"})
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def test_learned_items_become_fact_memories_once(client: TestClient) -> None:
    _busy_session(client)
    message = "Done. The root cause was that the cart cache expires after 5 minutes."
    r = client.post(f"/api/sessions/{SID}/summarize", json={"last_assistant_message": message})
    assert r.status_code == 201
    facts = _facts(client)
    assert [f["content"] for f in facts] == [
        "The root cause was that the cart cache expires after 5 minutes."
    ]
    assert r.json()["facts_saved"] == [facts[0]["id"]]
    assert facts[0]["session_id"] == SID and facts[0]["kind"] == "fact"
    # Stop fires again: no duplicate, no inflated hit count
    again = client.post(f"/api/sessions/{SID}/summarize", json={"last_assistant_message": message})
    assert again.json()["facts_saved"] == []
    assert _facts(client) == facts
    # another session learning the same thing merges into the one memory
    _start(client, "sess-summary-2")
    client.post("/api/prompts", json={"session_id": "sess-summary-2", "text": "check the cache"})
    other = client.post(
        "/api/sessions/sess-summary-2/summarize", json={"last_assistant_message": message}
    )
    assert other.json()["facts_saved"] == []
    merged = _facts(client)
    assert len(merged) == 1 and merged[0]["hit_count"] == facts[0]["hit_count"] + 1


def test_late_or_replayed_plans_do_not_overwrite_a_newer_one(client: TestClient) -> None:
    _start(client)
    old = {"plan": [{"content": "old step", "status": "pending"}]}
    new = {"plan": [{"content": "new step", "status": "in_progress"}]}
    path = f"/api/sessions/{SID}/plan"
    first = client.put(
        path, json={**old, "event_id": "todo-1", "updated_at": "2026-01-01T10:00:00Z"}
    )
    assert first.json()["applied"] is True
    second = client.put(
        path, json={**new, "event_id": "todo-2", "updated_at": "2026-01-01T10:05:00Z"}
    )
    assert second.json()["plan"] == new["plan"]
    # the first event replayed from the spool: acknowledged, not applied
    replay = client.put(
        path, json={**old, "event_id": "todo-1", "updated_at": "2026-01-01T10:00:00Z"}
    )
    assert replay.status_code == 200 and replay.json()["applied"] is False
    # an older plan that was never delivered before (late spool) is ignored too
    late = client.put(
        path, json={**old, "event_id": "todo-0", "updated_at": "2026-01-01T09:59:00Z"}
    )
    assert late.json()["applied"] is False
    assert client.get(f"/api/sessions/{SID}").json()["plan"] == new["plan"]
    bad = client.put(path, json={**new, "updated_at": "not a time"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "updated_at"
