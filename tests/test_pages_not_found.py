"""An unknown address: a browser gets the dashboard's not-found page, an API client JSON."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

pytestmark = pytest.mark.both_backends

HTML = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_a_browser_gets_the_not_found_page(client: TestClient) -> None:
    for path in ("/no-such-page", "/memories/x/y/z", "/static/missing.css"):
        r = client.get(path, headers=HTML)
        assert r.status_code == 404, path
        assert r.headers["content-type"].startswith("text/html"), path
        assert "<h1>Not found</h1>" in r.text and f"There is no page {path}" in r.text
        assert 'href="/"' in r.text  # a way back into the dashboard


def test_api_clients_keep_the_json_error(client: TestClient) -> None:
    for path, headers in (
        ("/api/nope", HTML),  # /api/* is JSON even for a browser
        ("/no-such-page", {"accept": "application/json"}),
        ("/no-such-page", {}),
    ):
        r = client.get(path, headers=headers)
        assert r.status_code == 404
        assert r.json()["error"] == {"code": "not_found", "message": f"no route for {path}"}


def test_an_anonymous_browser_still_gets_the_login_page(anon_client: TestClient) -> None:
    r = anon_client.get("/no-such-page", headers=HTML)
    assert r.status_code == 401 and 'name="token"' in r.text
