"""Learning from use on the dashboard: an item's record on its page, what a session was given
and what became of it, the use rate on the stats page."""

from __future__ import annotations

import html

import pytest
from starlette.testclient import TestClient

from tests.test_api_use import PROMPT, S, ask, given, observe, remember, stop
from tests.test_pages import HTML, browser  # noqa: F401 (fixture)

pytestmark = pytest.mark.both_backends


def test_pages_show_what_was_given_and_used(client: TestClient, browser: TestClient) -> None:  # noqa: F811
    mid = remember(client)
    assert html.escape("Nothing judged yet") in browser.get("/stats", headers=HTML).text
    assert "not given at a prompt yet" in browser.get(f"/memories/{mid}", headers=HTML).text
    assert ("memory", mid) in given(ask(client, PROMPT))
    session = browser.get(f"/sessions/{S}", headers=HTML).text
    assert "Given by Cairn" in session and "not judged yet" in session
    observe(client, "Read billing/exports.py", ["billing/exports.py"])
    stop(client, "Done.")
    page = browser.get(f"/memories/{mid}", headers=HTML).text
    assert "shown 1 time, used 1; last used" in page and "read billing/exports.py" in page
    session = browser.get(f"/sessions/{S}", headers=HTML).text
    assert 'class="badge use-used">used</span>' in session
    assert f'href="/memories/{mid}">memory #{mid}</a>' in session
    stats = browser.get("/stats", headers=HTML).text
    assert "1 of 1 injected items were used" in stats
    assert "Share of injected items used, per day" in stats
