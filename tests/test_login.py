"""Dashboard logins: one server-side session per login that logout revokes, and login attempts
another site's page starts are refused before they count against the login rate limit."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.app import create_app
from worker.auth import TokenKeeper
from worker.settings import Settings, load_settings

pytestmark = pytest.mark.both_backends

FOREIGN = [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},  # a page on another 127.0.0.1 port
    {"Origin": "http://evil.example"},
    {"Origin": "http://127.0.0.1:9999"},
]


def token_of(settings: Settings) -> str:
    return settings.token_path.read_text().strip()


def log_in(client: TestClient, settings: Settings) -> str:
    response = client.post("/login", data={"token": token_of(settings)}, follow_redirects=False)
    assert response.status_code == 303
    cookie = client.cookies.get("cairn_session")
    assert cookie
    return cookie


def csrf(settings: Settings) -> str:
    keeper = TokenKeeper(settings.token_path)
    keeper.ensure()
    return keeper.derived("csrf")


def status_with(client: TestClient, cookie: str) -> int:
    # An explicit Cookie header wins over the client's cookie jar.
    return client.get("/api/status", headers={"Cookie": f"cairn_session={cookie}"}).status_code


@pytest.fixture
def app_clients(settings: Settings) -> Iterator[tuple[TestClient, TestClient]]:
    """Two browsers on one worker."""
    app = create_app(settings)
    with TestClient(app, base_url=BASE_URL) as one, TestClient(app, base_url=BASE_URL) as two:
        yield one, two


def test_each_login_gets_its_own_session_and_logout_ends_only_it(
    app_clients: tuple[TestClient, TestClient], settings: Settings
) -> None:
    one, two = app_clients
    first, second = log_in(one, settings), log_in(two, settings)
    assert first != second and token_of(settings) not in (first, second)
    assert status_with(one, first) == 200 and status_with(two, second) == 200

    out = one.post("/logout", headers={"X-Cairn-CSRF": csrf(settings)})
    assert out.status_code == 204
    one.cookies.clear()
    # The logged-out cookie is refused even when a browser (or a thief) sends it again.
    assert status_with(one, first) == 401
    assert status_with(two, second) == 200


def test_logins_survive_a_restart_and_are_private(settings: Settings) -> None:
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        cookie = log_in(client, settings)
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        assert status_with(client, cookie) == 200
    assert stat.S_IMODE(os.stat(settings.logins_path).st_mode) == 0o600
    assert cookie not in settings.logins_path.read_text()  # only digests are kept


def test_the_old_shared_cookie_no_longer_works(anon_client: TestClient, settings: Settings) -> None:
    keeper = TokenKeeper(settings.token_path)
    keeper.ensure()
    assert status_with(anon_client, keeper.derived("cookie")) == 401


def test_token_rotation_ends_every_login(
    app_clients: tuple[TestClient, TestClient], settings: Settings
) -> None:
    one, _ = app_clients
    cookie = log_in(one, settings)
    keeper = TokenKeeper(settings.token_path)
    keeper.ensure()
    keeper.rotate()  # what `cairn token --rotate` does from another process
    one.cookies.clear()
    assert status_with(one, cookie) == 401


def test_logins_are_capped(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    monkeypatch.setenv("CAIRN_MAX_DASHBOARD_LOGINS", "3")
    settings = load_settings()
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        cookies = []
        for _ in range(5):
            cookies.append(log_in(client, settings))
            client.cookies.clear()
        assert [status_with(client, c) for c in cookies] == [401, 401, 200, 200, 200]
    assert len(json.loads(settings.logins_path.read_text())["logins"]) == 3


@pytest.fixture
def login_limited(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> Iterator[tuple[TestClient, Settings]]:
    """An app with a small login budget, over the test's backend."""
    monkeypatch.setenv("CAIRN_RATE_LIMIT_LOGIN", "5/minute")
    settings = load_settings()
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        yield client, settings


def test_other_sites_cannot_spend_the_login_budget(
    login_limited: tuple[TestClient, Settings],
) -> None:
    client, settings = login_limited
    for headers in FOREIGN:
        for _ in range(6):  # more than the whole budget, per kind of foreign request
            link = client.get("/login/link/guess", headers=headers, follow_redirects=False)
            assert link.status_code == 403, headers
            assert "came from another site" in link.text
            form = client.post(
                "/login", data={"token": "guess"}, headers=headers, follow_redirects=False
            )
            assert form.status_code == 403, headers
    assert "cairn_session" not in client.cookies

    # The user's own login still works afterwards: a link from `cairn open` ...
    bearer = {"Authorization": f"Bearer {token_of(settings)}"}
    url = client.post("/api/login-links", json={"next": "/stats"}, headers=bearer).json()["url"]
    path = url.split("37800", 1)[1]
    opened = client.get(path, headers={"Sec-Fetch-Site": "none"}, follow_redirects=False)
    assert opened.status_code == 303 and opened.headers["location"] == "/stats"
    client.cookies.clear()
    # ... and the token form, posted from the login page itself.
    own = {"Origin": BASE_URL, "Sec-Fetch-Site": "same-origin"}
    form = client.post(
        "/login", data={"token": token_of(settings)}, headers=own, follow_redirects=False
    )
    assert form.status_code == 303


def test_the_login_budget_still_counts_own_site_attempts(
    login_limited: tuple[TestClient, Settings],
) -> None:
    client, _ = login_limited
    codes = [client.get("/login/link/guess").status_code for _ in range(6)]
    assert codes == [401] * 5 + [429]
