"""GET /api/context and /preview: session start vs prompt, budgets, refusal, skip injected."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.backends import rows
from worker.retrieval.tokens import estimate_tokens
from worker.store.backend import Backend

pytestmark = pytest.mark.both_backends

PROJECT = "/repo/ctx"


def _seed(client: TestClient, n: int = 3) -> None:
    obs = [
        {
            "project": PROJECT,
            "session_id": "old",
            "type": "file_write",
            "title": f"Edit src/payments/refund_{i}.py",
            "body": f"refund flow step {i} now retries the Stripe webhook",
            "files": [f"src/payments/refund_{i}.py"],
        }
        for i in range(n)
    ]
    assert client.post("/api/observations", json={"observations": obs}).status_code == 201


def test_session_start_lists_recent_observations_as_index_lines(client: TestClient) -> None:
    _seed(client)
    body = client.get("/api/context", params={"project": PROJECT, "session_id": "new"}).json()
    assert body["refused"] is False
    assert "FILE_WRITE Edit src/payments/refund_2.py" in body["text"]
    text = body["text"]
    assert text.index("WRITE Edit src/payments/refund_2") < text.index(
        "WRITE Edit src/payments/refund_0"
    )
    assert body["tokens"] == estimate_tokens(body["text"]) <= body["budget"] == 1500


def test_unknown_project_gives_empty_context(client: TestClient) -> None:
    body = client.get("/api/context", params={"project": "/nothing/here"}).json()
    assert body["text"] == ""
    assert body["items"] == []


def test_prompt_context_relevant_then_skipped_then_refused(client: TestClient) -> None:
    _seed(client)
    params = {"project": PROJECT, "session_id": "s2", "query": "why does the stripe webhook retry?"}
    first = client.get("/api/context", params=params).json()
    assert first["refused"] is False
    assert "Stripe webhook" in first["text"]
    assert first["text"].startswith("## Cairn: relevant memory")
    # The same prompt again in the same session: everything relevant was already given.
    second = client.get("/api/context", params=params).json()
    assert second["text"] == "" and second["refused"] is True
    unrelated = client.get(
        "/api/context",
        params={"project": PROJECT, "session_id": "s3", "query": "write a haiku about autumn"},
    ).json()
    assert unrelated == {"text": "", "items": [], "tokens": 0, "budget": 500, "refused": True}


def test_preview_shows_scores_and_records_nothing(client: TestClient) -> None:
    _seed(client)
    params = {"project": PROJECT, "session_id": "s4", "query": "stripe webhook retries"}
    preview = client.get("/api/context/preview", params=params).json()
    item = preview["items"][0]
    assert {"score", "signals", "tokens", "text"} <= set(item)
    # Preview recorded nothing: the real call still injects the same items.
    real = client.get("/api/context", params=params).json()
    assert [i["id"] for i in real["items"]] == [i["id"] for i in preview["items"]]


def test_budget_is_never_exceeded(client: TestClient) -> None:
    _seed(client, 40)
    for budget in (0, 5, 30, 60, 120, 400):
        for query in (None, "refund webhook retries"):
            params: dict[str, str | int] = {"project": PROJECT, "budget": budget}
            if query:
                params["query"] = query
            body = client.get("/api/context/preview", params=params).json()
            assert body["tokens"] <= budget
            assert estimate_tokens(body["text"]) <= budget
    resp = client.get("/api/context", params={"project": PROJECT, "budget": -1})
    assert resp.status_code == 400 and resp.json()["error"]["field"] == "budget"
    assert client.get("/api/context").json()["error"]["field"] == "project"


def test_session_start_caches_the_profile_it_had_to_compute(
    client: TestClient, store: Backend
) -> None:
    """The static profile part is a scan of recent observations: the first session start
    computes and stores it, the next ones read it (until the data or the TTL says otherwise)."""
    _seed(client)

    def cached() -> dict[str, Any] | None:
        found = rows(store, "SELECT value FROM kv WHERE key LIKE 'profile:%'")
        return json.loads(found[0][0]) if found else None

    assert cached() is None
    first = client.get("/api/context", params={"project": PROJECT}).json()["text"]
    entry = cached()
    assert entry is not None and "static" in entry
    assert client.get("/api/context", params={"project": PROJECT}).json()["text"] == first
    assert cached() == entry  # served from the cache: not recomputed


def test_a_prompt_gets_again_the_session_start_memory_it_needs(client: TestClient) -> None:
    """The session-start block is a broad list: a prompt the memory applies to gets it again
    (it used to be skipped as already given, and the prompt got nothing)."""
    memory = {
        "kind": "lesson",
        "content": "Tailwind broke the checkout styling last time: styling uses CSS modules",
        "project": PROJECT,
        "scope": "project",
        "pinned": True,
    }
    assert client.post("/api/memories", json=memory).status_code == 201
    start = client.get("/api/context", params={"project": PROJECT, "session_id": "s5"}).json()
    assert "Tailwind broke" in start["text"]
    params = {"project": PROJECT, "session_id": "s5", "query": "Can we use Tailwind for styling?"}
    prompt = client.get("/api/context", params=params).json()
    assert "Tailwind broke" in prompt["text"] and prompt["refused"] is False
    # What a prompt was given is still not repeated at the next prompt.
    assert client.get("/api/context", params=params).json()["refused"] is True


def test_prompt_context_leaves_out_a_silent_success_and_weak_items(client: TestClient) -> None:
    """A command that succeeded and printed nothing says nothing at a prompt; an item holding
    little of the prompt does not ride along with a strong one."""
    obs = [
        {
            "project": PROJECT,
            "session_id": "old",
            "type": "command",
            "title": "Run: Format check",
            "body": "command: terraform fmt -recursive -check\nexit code: 0",
        },
        {
            "project": PROJECT,
            "session_id": "old",
            "type": "command",
            "title": "Run: terraform validate (exit 1)",
            "body": "command: terraform validate\nexit code: 1\n"
            "stderr: Error: fmt check failed in modules/vpc/main.tf",
        },
        {
            "project": PROJECT,
            "session_id": "old",
            "type": "file_write",
            "title": "Edit modules/vpc/variables.tf",
            "body": "new: variable region, used by terraform modules and the vpc",
            "files": ["modules/vpc/variables.tf"],
        },
    ]
    assert client.post("/api/observations", json={"observations": obs}).status_code == 201
    params = {"project": PROJECT, "session_id": "s6", "query": "terraform fmt check fails"}
    text = client.get("/api/context", params=params).json()["text"]
    assert "terraform validate (exit 1)" in text
    assert "Format check" not in text
    assert "variables.tf" not in text


def test_a_prompt_stored_with_context_answers_as_get_context_would(client: TestClient) -> None:
    _seed(client)
    text = "why does the stripe webhook retry?"
    body = {"session_id": "s9", "project": PROJECT, "text": text, "context": {}}
    stored = client.post("/api/prompts", json=body)
    assert stored.status_code == 201 and stored.json()["number"] == 1
    context = stored.json()["context"]
    assert context["refused"] is False and "Stripe webhook" in context["text"]
    # It recorded what it injected for the session, as GET /api/context does.
    again = client.get(
        "/api/context", params={"project": PROJECT, "session_id": "s9", "query": text}
    )
    assert again.json()["refused"] is True
    plain = client.post("/api/prompts", json={"session_id": "s9", "text": "no context asked"})
    assert "context" not in plain.json()
