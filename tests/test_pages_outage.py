"""The dashboard while its team database is down (a real PostgreSQL server shut down under a real
app): a browser's page answers 503 with an HTML page saying what cannot be reached (password
masked), how many hook events wait in the spool, and that it retries; the page's poll reloads it
once the server is back. /api/ routes and htmx fragments keep the JSON 503 (hooks spool on it)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from starlette.testclient import TestClient

from tests import pg
from tests.conftest import BASE_URL
from tests.hook_modules import hook_io
from worker.app import create_app
from worker.settings import Settings, load_settings

pytestmark = pytest.mark.postgres

PASSWORD = "hunter2-pw"  # the test server trusts loopback: any password connects
HTML = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
HTMX = {"hx-request": "true", "accept": "*/*"}
PAGES = ("/", "/memories?kind=fact", "/sessions", "/search?q=invoices", "/stats")


@dataclass
class Dashboard:
    browser: TestClient  # logged in through the login form: cookie auth, as a browser is
    server: pg.PostgresServer
    settings: Settings

    @property
    def bearer(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.settings.token_path.read_text().strip()}"}

    def spool(self, n: int) -> None:
        """What the hooks do when a write answers 503: their own spool code appends the event."""
        records: list[dict[str, object]] = [
            {
                "v": 1,
                "method": "POST",
                "path": "/api/observations",
                "body": {
                    "project": "/p/app",
                    "session_id": "s-down",
                    "type": "command",
                    "title": f"$ make invoices {k}",
                    "event_id": f"cc:s-down:toolu_{k}",
                },
            }
            for k in range(n)
        ]
        assert hook_io.spool_append(str(self.settings.home), records) == n


@pytest.fixture(scope="module")
def own_server() -> Iterator[pg.PostgresServer]:
    """A server of this module's own: shutting it down cuts no other test's database."""
    with pg.throwaway_server() as server:
        yield server


@pytest.fixture
def dashboard(
    own_server: pg.PostgresServer, isolated_home: object, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Dashboard]:
    with own_server.database() as plain_url:
        url = plain_url.replace("://postgres@", f"://postgres:{PASSWORD}@", 1)
        monkeypatch.setenv("CAIRN_DATABASE_URL", url)
        # The spool is replayed when a test asks, so its count is what the test spooled.
        monkeypatch.setenv("CAIRN_SPOOL_REPLAY_SECONDS", "600")
        settings = load_settings()
        app = create_app(settings)
        with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as browser:
            token = settings.token_path.read_text().strip()
            login = browser.post("/login", data={"token": token}, follow_redirects=False)
            assert login.status_code == 303
            try:
                yield Dashboard(browser, own_server, settings)
            finally:
                if own_server.process is None:
                    own_server.start(own_server.port)  # the same port: the app's URL holds


def test_every_page_during_an_outage_says_so_and_retries(dashboard: Dashboard) -> None:
    browser = dashboard.browser
    for path in PAGES:
        assert browser.get(path, headers=HTML).status_code == 200, path
    dashboard.server.shut_down()
    dashboard.spool(2)
    for path in PAGES:
        response = browser.get(path, headers=HTML)
        page = response.text
        assert response.status_code == 503, (path, page[:500])
        assert response.headers["content-type"].startswith("text/html"), path
        assert "<h1" in page and "The team database is unreachable" in page, path
        # The target with its password masked, and the driver's reason.
        assert "<code>postgresql://postgres:***@127.0.0.1:" in page, path
        assert "the team database postgresql://postgres:***@127.0.0.1:" in page, path
        assert "Connection refused" in page or "connection failed" in page, path
        assert PASSWORD not in page, path
        assert "2 hook events are kept on this machine and will be replayed" in page, path
        # The normal layout (navigation for the logged-in user), htmx from this worker only.
        assert 'aria-label="Main"' in page and "Log out" in page
        assert '<script src="/static/vendor/htmx.min.js" defer></script>' in page
        assert "https://" not in page and "//cdn" not in page
        # It retries by itself, and offers to at once.
        assert 'hx-get="/database-status" hx-trigger="every 5s"' in page
        assert f'<a href="{path}">Try again now</a>' in page
        assert response.headers["retry-after"] == "5"
    memories = browser.get("/memories", headers=HTML).text
    assert '<a href="/memories" aria-current="page">Memories</a>' in memories


def test_api_routes_and_fragments_keep_the_json_503(dashboard: Dashboard) -> None:
    browser = dashboard.browser
    dashboard.server.shut_down()
    answers = {
        "GET /api/memories (a browser's Accept)": browser.get("/api/memories", headers=HTML),
        "POST /api/observations (a hook's write)": browser.post(
            "/api/observations",
            json={"project": "/p/app", "type": "command", "title": "$ make"},
            headers=dashboard.bearer,
        ),
        # A search ran its keyword pass in a task group, which wrapped the refusal: it was a 500.
        "GET /api/search": browser.get("/api/search?q=invoices", headers=dashboard.bearer),
        "GET /memories from htmx": browser.get("/memories", headers=HTMX),
    }
    for what, response in answers.items():
        assert response.status_code == 503, (what, response.text[:300])
        assert response.headers["content-type"] == "application/json", what
        error = response.json()["error"]
        assert error["code"] == "unavailable", what
        assert error["message"].startswith("the team database postgresql://postgres:***@"), what
        assert PASSWORD not in response.text, what


def test_the_poll_shows_the_outage_then_reloads_once_the_database_is_back(
    dashboard: Dashboard,
) -> None:
    browser = dashboard.browser
    dashboard.server.shut_down()
    dashboard.spool(1)
    down = browser.get("/database-status", headers=HTMX)
    assert down.status_code == 200 and "hx-refresh" not in down.headers
    assert 'id="database-down" hx-get="/database-status" hx-trigger="every 5s"' in down.text
    assert "the team database postgresql://postgres:***@127.0.0.1:" in down.text
    assert "1 hook event is kept on this machine" in down.text
    assert PASSWORD not in down.text
    # Only for the logged-in: a visitor without the cookie is refused (and sent to log in).
    cookies = dict(browser.cookies)
    browser.cookies.clear()
    try:
        anonymous = browser.get("/database-status", headers=HTMX)
    finally:
        browser.cookies.update(cookies)
    assert anonymous.status_code == 401 and "postgresql" not in anonymous.text

    dashboard.server.start(dashboard.server.port)
    back = browser.get("/database-status", headers=HTMX)
    assert back.status_code == 200 and back.headers["hx-refresh"] == "true"
    assert browser.get("/sessions", headers=HTML).status_code == 200
    # What the hooks spooled meanwhile goes in once the database answers.
    replay = browser.post("/api/spool/replay", headers=dashboard.bearer)
    assert replay.status_code == 200 and replay.json()["replayed"] == 1, replay.text
    sessions = browser.get("/sessions", headers=HTML).text
    assert "s-down" in sessions
