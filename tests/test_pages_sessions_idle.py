"""A session whose SessionEnd never came shows as idle after CAIRN_SESSION_IDLE_MINUTES."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.app import create_app
from worker.clock import now_ms, to_iso
from worker.settings import load_settings

pytestmark = pytest.mark.both_backends

P = "/p/app"
HOUR = 3_600_000


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch, backend: str) -> Iterator[TestClient]:
    """The dashboard over the test's backend (`backend` sets CAIRN_DATABASE_URL on postgres)."""
    monkeypatch.setenv("CAIRN_SESSION_IDLE_MINUTES", "30")
    settings = load_settings()
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        client.headers["Authorization"] = "Bearer " + settings.token_path.read_text().strip()
        yield client


def start(client: TestClient, sid: str, ago_ms: int) -> None:
    body = {"session_id": sid, "project": P, "started_at": to_iso(now_ms() - ago_ms)}
    assert client.post("/api/sessions", json=body).status_code == 201


def badges(client: TestClient) -> dict[str, str]:
    page = client.get("/sessions", headers={"accept": "text/html"}).text
    rows = re.findall(r'href="/sessions/([^"]+)".*?class="badge status-(\w+)"', page, re.S)
    return dict(rows)


def test_quiet_active_sessions_show_idle(browser: TestClient) -> None:
    start(browser, "fresh", 60_000)  # started a minute ago
    start(browser, "crashed", 2 * HOUR)  # started two hours ago, never heard of since
    start(browser, "busy", 3 * HOUR)  # old, but a prompt came a minute ago
    prompt = {"session_id": "busy", "text": "still here", "created_at": to_iso(now_ms() - 60_000)}
    assert browser.post("/api/prompts", json=prompt).status_code == 201
    start(browser, "quiet-tools", 3 * HOUR)  # last tool event 45 minutes ago
    obs = {
        "session_id": "quiet-tools",
        "project": P,
        "type": "command",
        "title": "ran tests",
        "created_at": to_iso(now_ms() - 45 * 60_000),
    }
    assert browser.post("/api/observations", json=obs).status_code == 201
    start(browser, "done", 2 * HOUR)
    assert browser.post("/api/sessions/done/end", json={}).status_code == 200

    assert badges(browser) == {
        "fresh": "active",
        "crashed": "idle",
        "busy": "active",
        "quiet-tools": "idle",
        "done": "ended",
    }
    detail = browser.get("/sessions/crashed", headers={"accept": "text/html"}).text
    assert "<dd>idle (no activity since" in detail
    # The API keeps the stored status and says when the session was last heard of.
    api = browser.get("/api/sessions/quiet-tools").json()
    assert api["status"] == "active"
    assert api["last_activity_at"] == obs["created_at"]
