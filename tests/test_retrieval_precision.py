"""A project that ran ruff, searched for "ruff" (issue 17: 2 relevant of 20): every observation
about ruff comes before any other, in keyword and hybrid search, through GET /api/search."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from tests.ruff_history import OBSERVATIONS, PROJECT, RELEVANT
from worker.app import create_app
from worker.settings import load_settings

pytestmark = pytest.mark.both_backends


@pytest.fixture
def hybrid_client() -> Iterator[TestClient]:
    """The app with the deterministic fake embedder, so hybrid search has vectors to fuse."""
    settings = load_settings(embed_enabled=True, embed_model="fake-hash-64")
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        client.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
        yield client


def _seed(client: TestClient) -> set[int]:
    """Two sessions a day apart, six days ago, an observation every four minutes."""
    start = datetime.now(UTC) - timedelta(days=6)
    items = [
        {
            "project": PROJECT,
            "session_id": "s1" if i < 20 else "s2",
            "created_at": (start + timedelta(minutes=4 * i + (1440 if i >= 20 else 0))).isoformat(),
            **obs,
        }
        for i, obs in enumerate(OBSERVATIONS)
    ]
    resp = client.post("/api/observations", json={"observations": items})
    assert resp.status_code == 201, resp.text
    ids = [item["id"] for item in resp.json()["items"]]
    return {ids[i] for i in RELEVANT}


def _wait_embedded(client: TestClient) -> None:
    deadline = time.monotonic() + 60
    while True:
        stats = client.get("/api/embeddings/stats").json()
        if stats["status"] == "ready" and stats["coverage"] == 1.0:
            return
        assert time.monotonic() < deadline, stats
        time.sleep(0.05)


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_every_item_about_ruff_ranks_above_the_rest(hybrid_client: TestClient, mode: str) -> None:
    relevant = _seed(hybrid_client)
    _wait_embedded(hybrid_client)
    params = {"q": "ruff", "project": PROJECT, "mode": mode, "limit": 20, "explain": "true"}
    resp = hybrid_client.get("/api/search", params=params)
    assert resp.status_code == 200, resp.text
    hits = resp.json()["hits"]
    top = hits[: len(relevant)]
    # precision@k with k = the number of relevant items: all of them, ahead of anything else.
    misplaced = [(h["title"], h["match"]) for h in top if h["id"] not in relevant]
    assert not misplaced, f"{len(top) - len(misplaced)} of {len(relevant)}: {misplaced}"
