"""Real worker, real offline model: a later session's prompt finds an earlier session's work,
and an unrelated prompt injects nothing."""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.worker_process import WorkerProcess
from tests.vector_margins import (
    REFUND_PROMPT,
    REFUND_SESSION,
    UNRELATED_PROMPTS,
    assert_ahead,
    assert_clear_of,
)
from worker.settings import load_settings

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

PROJECT = "/home/dev/shop"


@pytest.fixture
def semantic_worker(isolated_home: Path, backend: str) -> Iterator[WorkerProcess]:
    """A real worker that embeds; on the `postgres` backend over the test's team database."""
    env = {"CAIRN_EMBED_ENABLED": "1"}
    if backend == "postgres":
        env["CAIRN_DATABASE_URL"] = os.environ["CAIRN_DATABASE_URL"]
    proc = WorkerProcess(home=isolated_home, env_extra=env).start()
    try:
        yield proc
    finally:
        proc.stop()


def _get(worker: WorkerProcess, path: str, **params: Any) -> Any:
    status, body = worker.request("GET", f"{path}?{urllib.parse.urlencode(params)}")
    assert status == 200, body
    return body


def _wait_embedded(worker: WorkerProcess, timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    stats: dict[str, Any] = {}
    while time.monotonic() < deadline:
        stats = _get(worker, "/api/embeddings/stats")
        assert stats["status"] != "unavailable", stats
        if stats["status"] == "ready" and stats["coverage"] == 1.0:
            return stats
        time.sleep(0.2)
    raise AssertionError(f"embeddings never caught up: {stats}")


def test_later_session_prompt_finds_earlier_work(semantic_worker: WorkerProcess) -> None:
    w = semantic_worker
    assert w.request("POST", "/api/sessions", {"session_id": "one", "project": PROJECT})[0] in (
        200,
        201,
    )
    observations = REFUND_SESSION
    status, body = w.request(
        "POST",
        "/api/observations",
        {"observations": [{"project": PROJECT, "session_id": "one", **o} for o in observations]},
    )
    assert status == 201, body
    refund_id = body["items"][0]["id"]
    stats = _wait_embedded(w)
    assert stats["dimensions"] == 384 and stats["queue_depth"] == 0

    # A later session, a prompt worded differently from what was recorded.
    w.request("POST", "/api/sessions", {"session_id": "two", "project": PROJECT})
    prompt = REFUND_PROMPT
    w.request("POST", "/api/prompts", {"session_id": "two", "project": PROJECT, "text": prompt})
    context = _get(w, "/api/context", project=PROJECT, session_id="two", query=prompt)
    assert context["refused"] is False
    assert context["items"][0] == {"section": "relevant", "kind": "observation", "id": refund_id}
    assert "Edit src/checkout/refunds.py" in context["text"]
    assert 0 < context["tokens"] <= context["budget"] == 500

    # Semantic search alone finds it too, and explains itself.
    # Each decision with a margin that holds on any CPU (tests/vector_margins.py).
    # (The prompt itself is an item too: observations only, as test_retrieval_margins.py.)
    recorded = {"project": PROJECT, "kind": "observation", "explain": "true"}
    hits = _get(w, "/api/search", q=prompt, mode="semantic", **recorded)
    assert hits["mode"] == "semantic" and hits["hits"][0]["id"] == refund_id
    threshold = load_settings().judgment.refusal_min_cosine
    assert_clear_of(hits["explain"]["best_cosine"], threshold, True, "the refund prompt")
    first, *rest = (h["match"]["cosine"] for h in hits["hits"])
    assert_ahead(first, max(rest), "the refund edit over the next hit")

    # Unrelated prompts inject nothing at all.
    for unrelated in UNRELATED_PROMPTS:
        context = _get(w, "/api/context", project=PROJECT, session_id="two", query=unrelated)
        assert context == {"text": "", "items": [], "tokens": 0, "budget": 500, "refused": True}
        why = _get(w, "/api/search", q=unrelated, **recorded)["explain"]
        assert_clear_of(why["best_cosine"], threshold, False, repr(unrelated))
