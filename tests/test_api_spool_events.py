"""POST /api/spool/events (what `cairn import claude-code` sends): each session's requests in
order, the sessions side by side (their writes share transactions), and a batch cut short by a
busy worker sent again stores everything exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from worker.spool import SpoolReplayer
from worker.store import Store

pytestmark = pytest.mark.both_backends

SESSIONS = ("sa", "sb", "sc")


def session_events(sid: str, prompts: int = 4, calls: int = 3) -> list[list[dict[str, Any]]]:
    """Per turn: a prompt and its tool calls (the first turn opens the session)."""
    turns: list[list[dict[str, Any]]] = []
    for p in range(prompts):
        turn: list[dict[str, Any]] = []
        if p == 0:
            body = {"session_id": sid, "project": "/repo", "event_id": f"{sid}:start"}
            turn.append({"method": "POST", "path": "/api/sessions", "body": body})
        body = {"session_id": sid, "project": "/repo", "text": f"{sid} p{p}"}
        turn.append(
            {"method": "POST", "path": "/api/prompts", "body": body | {"event_id": f"{sid}:p{p}"}}
        )
        for c in range(calls):
            obs = {
                "session_id": sid,
                "project": "/repo",
                "type": "command",
                "title": f"{sid} run {p}.{c}",
                "event_id": f"{sid}:t{p}.{c}",
            }
            turn.append({"method": "POST", "path": "/api/observations", "body": obs})
        turns.append(turn)
    summary = {"last_assistant_message": f"{sid} done", "event_id": f"{sid}:stop"}
    turns.append([{"method": "POST", "path": f"/api/sessions/{sid}/summarize", "body": summary}])
    return turns


def interleaved() -> list[dict[str, Any]]:
    """The sessions' turns taken in turn, as several sessions in one import batch."""
    per = [session_events(sid) for sid in SESSIONS]
    out: list[dict[str, Any]] = []
    for i in range(max(map(len, per))):
        for turns in per:
            if i < len(turns):
                out.extend(turns[i])
    return out


def prompts_of(client: TestClient, sid: str) -> list[tuple[int, str]]:
    detail = client.get(f"/api/sessions/{sid}").json()
    return [(p["number"], p["text"]) for p in detail["prompts"]]


def check_stored(client: TestClient) -> None:
    for sid in SESSIONS:
        assert prompts_of(client, sid) == [(n + 1, f"{sid} p{n}") for n in range(4)]
        summary = client.get(f"/api/sessions/{sid}/summary")
        assert summary.status_code == 200, summary.text
        items = client.get(f"/api/observations?session_id={sid}&limit=100").json()["items"]
        assert len(items) == 12


def test_sessions_keep_their_order_and_share_transactions(client: TestClient, backend: str) -> None:
    events = interleaved()
    store: Store = client.app_state["cairn"].store
    # Group commit is the SQLite writer's (one writer thread batching requests); on PostgreSQL
    # each request commits on its own pooled connection.
    groups = store.groups_committed if backend == "sqlite" else 0
    response = client.post("/api/spool/events", json={"events": events})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["delivered"] == len(events) and body["rejected"] == 0
    check_stored(client)
    # 3 sessions x (start + 4 prompts + 4 batches of calls + summary) = 30 requests: with the
    # sessions side by side the writer commits them in fewer transactions than one each.
    if backend == "sqlite":
        assert store.groups_committed - groups < 30
    again = client.post("/api/spool/events", json={"events": events}).json()
    # Prompts and calls are recognised by event id (starts and summaries are rewritten alike).
    assert again["duplicates"] == 3 * (4 + 12)
    check_stored(client)


def test_a_batch_cut_short_is_sent_again_and_stored_exactly_once(client: TestClient) -> None:
    events = interleaved()
    replayer = client.app_state["cairn"].services["spool"]
    assert isinstance(replayer, SpoolReplayer)
    real = replayer.dispatch
    seen = {"sb": 0}

    async def busy_for_sb(method: str, path: str, body: Any) -> tuple[int, Any]:
        if "sb" in path or (isinstance(body, dict) and body.get("session_id") == "sb"):
            seen["sb"] += 1
            if seen["sb"] == 3:  # sb's second prompt: the worker cannot take it now
                return 503, {"error": {"message": "busy"}}
        return await real(method, path, body)

    replayer.dispatch = busy_for_sb  # type: ignore[method-assign]
    response = client.post("/api/spool/events", json={"events": events})
    assert response.status_code == 503
    delivered = response.json()["delivered"]
    cut = next(i for i, e in enumerate(events) if e["body"].get("event_id") == "sb:p1")
    assert delivered == cut  # everything before it was stored; it and what follows was not all
    replayer.dispatch = real  # type: ignore[method-assign]
    rest = client.post("/api/spool/events", json={"events": events[delivered:]}).json()
    assert rest["delivered"] == len(events) - delivered
    assert rest["duplicates"] > 0  # sa's and sc's later lines went through the first time
    check_stored(client)
