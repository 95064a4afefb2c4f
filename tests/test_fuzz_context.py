"""Hypothesis on the context builder through GET /api/context: whatever is stored (any Unicode,
Markdown, HTML, huge or empty text) and whatever the budget, the answer is a 200 whose text
fits the budget (by the worker's own token estimate), and a refusal injects nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.examples import examples
from worker.retrieval.tokens import estimate_tokens

pytestmark = pytest.mark.both_backends

PROJECT = "/fuzz/repo"
texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=400,
)
items = st.lists(
    st.tuples(st.sampled_from(["observation", "memory", "prompt"]), texts, st.integers(1, 5)),
    min_size=0,
    max_size=12,
)


def store(client: TestClient, kind: str, text: str, importance: int, n: int) -> None:
    if kind == "observation":
        body = {
            "project": PROJECT,
            "session_id": "fz",
            "type": "note",
            "title": text[:500],
            "body": text,
            "importance": importance,
        }
        client.post("/api/observations", json=body)
    elif kind == "memory":
        client.post(
            "/api/memories",
            json={"kind": "fact", "content": text, "project": PROJECT, "importance": importance},
        )
    else:
        client.post("/api/prompts", json={"session_id": "fz", "project": PROJECT, "text": text})


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    items=items,
    budget=st.integers(0, 3000),
    query=st.one_of(st.none(), texts),
    source=st.sampled_from(["startup", "resume", "compact", "clear", ""]),
)
def test_context_always_fits_its_budget(
    client: TestClient,
    items: list[tuple[str, str, int]],
    budget: int,
    query: str | None,
    source: str,
) -> None:
    for n, (kind, text, importance) in enumerate(items):
        store(client, kind, text, importance, n)
    params: dict[str, Any] = {"project": PROJECT, "session_id": "other", "budget": budget}
    if query is not None:
        params["query"] = query
    if source:
        params["source"] = source
    r = client.get("/api/context", params=params)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["budget"] == budget
    assert data["tokens"] <= budget and estimate_tokens(data["text"]) <= budget
    if data["refused"]:
        assert data["text"] == ""
    preview = client.get("/api/context/preview", params=params)
    assert preview.status_code == 200, preview.text
