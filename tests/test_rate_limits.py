"""Rate limits per route group (slowapi): 429 with the JSON error shape and Retry-After."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.app import create_app
from worker.settings import load_settings

pytestmark = pytest.mark.both_backends


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch, backend: str) -> Iterator[TestClient]:
    """An app with small write and read budgets, over the test's backend."""
    monkeypatch.setenv("CAIRN_RATE_LIMIT_WRITE", "3/minute")
    monkeypatch.setenv("CAIRN_RATE_LIMIT_READ", "5/minute")
    settings = load_settings()
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        client.headers["Authorization"] = "Bearer " + settings.token_path.read_text().strip()
        yield client


def obs(i: int) -> dict[str, object]:
    return {"project": "p", "type": "note", "title": f"t{i}"}


def test_writes_over_the_limit_get_429_with_retry_after(limited: TestClient) -> None:
    for i in range(3):
        assert limited.post("/api/observations", json=obs(i)).status_code == 201
    refused = limited.post("/api/observations", json=obs(9))
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert "3 per 1 minute" in refused.json()["error"]["message"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    # Nothing was stored for the refused request.
    assert len(limited.get("/api/observations").json()["items"]) == 3


def test_limits_are_per_route(limited: TestClient) -> None:
    for i in range(3):
        limited.post("/api/observations", json=obs(i))
    assert limited.post("/api/observations", json=obs(4)).status_code == 429
    # Another write route has its own budget.
    started = limited.post("/api/sessions", json={"session_id": "s", "project": "p"})
    assert started.status_code == 201


def test_reads_have_their_own_limit(limited: TestClient) -> None:
    codes = [limited.get("/api/projects").status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]


def test_default_limits_let_a_busy_hook_session_through(client: TestClient) -> None:
    # 300 tool calls in a burst (far more than an agent makes in a minute) pass.
    codes = {client.post("/api/observations", json=obs(i)).status_code for i in range(300)}
    assert codes == {201}


def test_the_limiter_starts_no_thread_per_request(client: TestClient) -> None:
    """limits' MemoryStorage started a sweeping Timer thread on nearly every hit."""
    import threading

    from worker.ratelimit import SweepingMemoryStorage

    assert isinstance(client.app.state.limiter._storage, SweepingMemoryStorage)  # type: ignore[attr-defined]
    before = threading.active_count()
    started: list[str] = []
    original = threading.Thread.start

    def spy(self: threading.Thread) -> None:
        started.append(self.name)
        original(self)

    threading.Thread.start = spy  # type: ignore[method-assign]
    try:
        for _ in range(30):
            assert client.get("/api/projects").status_code == 200
    finally:
        threading.Thread.start = original  # type: ignore[method-assign]
    assert not [name for name in started if "Timer" in name or name.startswith("Thread-")], started
    assert threading.active_count() <= before + 1
