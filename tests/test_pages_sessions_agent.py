"""The sessions page labels each session with its agent and filters by it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.app import create_app
from worker.settings import load_settings

pytestmark = pytest.mark.both_backends


@pytest.fixture
def browser(backend: str) -> Iterator[TestClient]:
    """The dashboard over the test's backend (`backend` sets CAIRN_DATABASE_URL on postgres)."""
    settings = load_settings()
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        client.headers["Authorization"] = "Bearer " + settings.token_path.read_text().strip()
        yield client


def rows(page: str) -> dict[str, str]:
    found = re.findall(
        r'href="/sessions/([^"]+)".*?</td>\s*<td>[^<]*</td>\s*<td>(.*?)</td>\s*<td><time',
        page,
        re.S,
    )
    return {sid: re.sub(r"<[^>]+>", "", cell).strip() for sid, cell in found}


def test_sessions_show_and_filter_by_agent(browser: TestClient) -> None:
    for sid, agent in (("s-claude", "claude-code"), ("s-codex", "codex"), ("s-copilot", "copilot")):
        body = {"session_id": sid, "project": "/p/app", "meta": {"source": agent}}
        assert browser.post("/api/sessions", json=body).status_code == 201
    html = {"accept": "text/html"}
    page = browser.get("/sessions", headers=html).text
    assert rows(page) == {
        "s-claude": "Claude Code",
        "s-codex": "Codex CLI",
        "s-copilot": "Copilot CLI",
    }
    assert '<option value="gemini">Gemini CLI</option>' in page
    only = browser.get("/sessions", params={"agent": "codex"}, headers=html).text
    assert rows(only) == {"s-codex": "Codex CLI"}
    assert '<option value="codex" selected>' in only
    none = browser.get("/sessions", params={"agent": "cursor"}, headers=html).text
    assert "Nothing matches these filters" in none
    ignored = browser.get("/sessions", params={"agent": "<script>"}, headers=html)
    assert ignored.status_code == 200 and len(rows(ignored.text)) == 3  # unknown: no filter
    detail = browser.get("/sessions/s-copilot", headers=html).text
    assert re.search(r"<dt>Agent</dt><dd><span[^>]*>Copilot CLI</span>", detail)
