"""Dashboard pages through the real app (TestClient): login, rendering, escaping, fragments."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.app import create_app
from worker.ops.logins import safe_next
from worker.pages.charts import Bar, bar_chart, column_chart, gauge
from worker.pages.render import highlight, rich
from worker.settings import Settings

pytestmark = pytest.mark.both_backends

XSS = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
HTML = {"accept": "text/html"}


@pytest.fixture
def browser(settings: Settings) -> Iterator[TestClient]:
    """A client logged in through the login form (cookie auth, like a browser)."""
    app = create_app(settings)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        token = settings.token_path.read_text().strip()
        response = client.post("/login", data={"token": token}, follow_redirects=False)
        assert response.status_code == 303
        yield client


def bearer(settings: Settings) -> dict[str, str]:
    return {"Authorization": f"Bearer {settings.token_path.read_text().strip()}"}


def csrf_of(page: str) -> str:
    match = re.search(r'<meta name="cairn-csrf" content="([0-9a-f]*)">', page)
    assert match is not None
    return match.group(1)


def seed(client: TestClient, settings: Settings, n: int = 3) -> None:
    h = bearer(settings)
    assert (
        client.post(
            "/api/sessions", json={"session_id": "s-1", "project": "/p/app"}, headers=h
        ).status_code
        == 201
    )
    client.post("/api/prompts", json={"session_id": "s-1", "text": f"prompt {XSS}"}, headers=h)
    for i in range(n):
        body = {
            "project": "/p/app",
            "session_id": "s-1",
            "type": "command",
            "title": f"ran tests {i} {XSS}",
            "body": f"pytest output {XSS}",
        }
        assert client.post("/api/observations", json=body, headers=h).status_code == 201


def test_unauthenticated_page_shows_login_with_401(anon_client: TestClient) -> None:
    response = anon_client.get("/memories?kind=fact", headers=HTML)
    assert response.status_code == 401
    assert "Log in to Cairn" in response.text
    assert 'name="next" value="/memories?kind=fact"' in response.text
    # No CSRF value is handed to a visitor who is not logged in.
    assert csrf_of(response.text) == ""


def test_api_without_token_stays_json_401(anon_client: TestClient) -> None:
    response = anon_client.get("/api/observations", headers=HTML)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_wrong_token_is_refused_with_message(anon_client: TestClient) -> None:
    response = anon_client.post("/login", data={"token": "nope", "next": "/"})
    assert response.status_code == 401
    assert "not right" in response.text
    assert "cairn_session" not in response.headers.get("set-cookie", "")


def test_login_sets_strict_httponly_cookie_and_redirects_locally(
    anon_client: TestClient, settings: Settings
) -> None:
    token = settings.token_path.read_text().strip()
    response = anon_client.post(
        "/login", data={"token": token, "next": "//evil.example/x"}, follow_redirects=False
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert token not in response.headers["set-cookie"]


def test_one_time_link_works_once(anon_client: TestClient, settings: Settings) -> None:
    created = anon_client.post(
        "/api/login-links", json={"next": "/stats"}, headers=bearer(settings)
    )
    assert created.status_code == 201
    url = created.json()["url"]
    path = url.split("127.0.0.1:37800", 1)[1]
    first = anon_client.get(path, follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/stats"
    assert "cairn_session=" in first.headers["set-cookie"]
    anon_client.cookies.clear()
    second = anon_client.get(path, follow_redirects=False)
    assert second.status_code == 401
    assert "already used or has expired" in second.text


def test_login_link_needs_the_token(anon_client: TestClient) -> None:
    assert anon_client.post("/api/login-links", json={}).status_code == 401


def test_login_link_expires(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from worker import auth

    links = auth.LoginLinks(ttl_seconds=60)
    clock = [1000.0]
    monkeypatch.setattr(auth.time, "monotonic", lambda: clock[0])
    nonce, _ = links.create("/")
    clock[0] += 61
    assert links.consume(nonce) is None


def test_every_page_renders_and_escapes(browser: TestClient, settings: Settings) -> None:
    seed(browser, settings)
    memory = browser.post(
        "/api/memories",
        json={"kind": "fact", "content": f"memory {XSS}", "project": "/p/app"},
        headers=bearer(settings),
    )
    assert memory.status_code == 201
    mid = memory.json()["id"]
    pages = [
        "/",
        "/feed/items",
        "/search?q=tests",
        "/sessions",
        "/sessions/s-1",
        "/memories",
        f"/memories/{mid}",
        "/context?project=/p/app",
        "/stats",
        "/settings",
        "/timeline?project=/p/app",
    ]
    for path in pages:
        response = browser.get(path)
        assert response.status_code == 200, (path, response.text[:300])
        assert "<script>alert" not in response.text, path
        assert "<img src=x" not in response.text, path
        assert "content-security-policy" in response.headers
        assert "'unsafe-inline'" not in response.headers["content-security-policy"]
        # No inline script or style anywhere (the CSP would block it).
        assert not re.search(r"<script(?![^>]*\bsrc=)", response.text), path
        assert " style=" not in response.text and "<style" not in response.text, path


def test_token_never_appears_in_pages(browser: TestClient, settings: Settings) -> None:
    token = settings.token_path.read_text().strip()
    for path in ("/settings", "/", "/stats"):
        assert token not in browser.get(path).text


def test_feed_paginates_with_a_cursor(browser: TestClient, settings: Settings) -> None:
    seed(browser, settings, n=60)
    first = browser.get("/")
    assert first.text.count('class="feed-item') == settings.limits.page_size
    more = re.search(r'hx-get="/feed/items\?([^"]+)"', first.text)
    assert more is not None
    older = browser.get("/feed/items?" + more.group(1).replace("&amp;", "&"))
    # 60 observations + 1 prompt = 61 items: the second page holds the other 11.
    assert older.text.count('class="feed-item') == 11
    assert "Load older" not in older.text


def test_feed_filters_by_type_and_project(browser: TestClient, settings: Settings) -> None:
    seed(browser, settings)
    only_prompts = browser.get("/?type=prompt")
    assert only_prompts.text.count('class="feed-item') == 1
    assert browser.get("/?project=/nope").text.count('class="feed-item') == 0
    assert "No activity matches these filters" in browser.get("/?project=/nope").text


def test_live_item_fragment_respects_filters(browser: TestClient, settings: Settings) -> None:
    seed(browser, settings, n=1)
    assert 'id="observation-1"' in browser.get("/feed/item/observation/1").text
    assert browser.get("/feed/item/observation/1?type=prompt").text == ""
    assert browser.get("/feed/item/observation/1?project=/other").text == ""
    assert browser.get("/feed/item/observation/999").text == ""


def test_cookie_writes_need_the_csrf_header(browser: TestClient, settings: Settings) -> None:
    created = browser.post(
        "/api/memories",
        json={"kind": "fact", "content": "pin me", "scope": "global"},
        headers=bearer(settings),
    )
    mid = created.json()["id"]
    refused = browser.post(f"/memories/{mid}", data={"pinned": "1"})
    assert refused.status_code == 403
    csrf = csrf_of(browser.get("/memories").text)
    pinned = browser.post(
        f"/memories/{mid}",
        data={"pinned": "1"},
        headers={"X-Cairn-CSRF": csrf, "HX-Request": "true"},
    )
    assert pinned.status_code == 200
    assert "pinned" in pinned.text
    assert browser.get(f"/api/memories/{mid}", headers=bearer(settings)).json()["pinned"] is True


def test_memory_actions_round_trip(browser: TestClient, settings: Settings) -> None:
    csrf = csrf_of(browser.get("/memories").text)
    h = {"X-Cairn-CSRF": csrf, "HX-Request": "true"}
    made = browser.post(
        "/memories",
        data={
            "content": "Deploys go through make release",
            "kind": "decision",
            "project": "__global__",
            "importance": "4",
        },
        headers=h,
    )
    assert "Saved memory #" in made.text
    mid = int(re.search(r"Saved memory #(\d+)", made.text).group(1))  # type: ignore[union-attr]
    edited = browser.post(
        f"/memories/{mid}",
        data={
            "content": "Deploys go through make ship",
            "kind": "decision",
            "importance": "5",
            "tags": "deploy",
        },
        headers=h,
    )
    assert "make ship" in edited.text
    assert "Archive" in edited.text
    archived = browser.post(f"/memories/{mid}/archive", headers=h)
    assert "Restore" in archived.text
    restored = browser.post(f"/memories/{mid}/restore", headers=h)
    assert "Archive" in restored.text
    api = browser.get(f"/api/memories/{mid}", headers=bearer(settings)).json()
    assert api["content"] == "Deploys go through make ship" and api["importance"] == 5
    assert api["archived"] is False
    gone = browser.post(f"/memories/{mid}/forget", headers=h)
    assert "was forgotten" in gone.text
    assert browser.get(f"/api/memories/{mid}", headers=bearer(settings)).status_code == 404
    assert browser.post(f"/memories/{mid}/explode", headers=h).status_code == 404


def test_memory_edit_shows_api_validation_error(browser: TestClient, settings: Settings) -> None:
    mid = browser.post(
        "/api/memories",
        json={"kind": "fact", "content": "x", "scope": "global"},
        headers=bearer(settings),
    ).json()["id"]
    csrf = csrf_of(browser.get("/memories").text)
    response = browser.post(
        f"/memories/{mid}",
        data={"content": "", "kind": "fact"},
        headers={"X-Cairn-CSRF": csrf, "HX-Request": "true"},
    )
    assert response.status_code == 200
    assert 'role="alert"' in response.text


def test_rotate_token_keeps_this_browser_logged_in(browser: TestClient, settings: Settings) -> None:
    old = settings.token_path.read_text().strip()
    csrf = csrf_of(browser.get("/settings").text)
    response = browser.post("/settings/rotate-token", headers={"X-Cairn-CSRF": csrf})
    assert response.status_code == 204
    assert response.headers["hx-redirect"] == "/settings?rotated=1"
    assert settings.token_path.read_text().strip() != old
    page = browser.get("/settings?rotated=1")
    assert page.status_code == 200 and "token was rotated" in page.text


def test_logout_clears_the_cookie(browser: TestClient) -> None:
    csrf = csrf_of(browser.get("/").text)
    response = browser.post("/logout", headers={"X-Cairn-CSRF": csrf})
    assert response.status_code == 204
    assert browser.get("/", headers=HTML).status_code == 401


def test_htmx_and_sse_come_from_the_installed_package(anon_client: TestClient) -> None:
    htmx = anon_client.get("/static/vendor/htmx.min.js")
    assert htmx.status_code == 200 and "htmx" in htmx.text
    assert anon_client.get("/static/vendor/sse.js").status_code == 200
    assert anon_client.get("/static/vendor/debug.js").status_code == 404


def test_stats_draws_svg_charts(browser: TestClient, settings: Settings) -> None:
    seed(browser, settings, n=4)
    page = browser.get("/stats").text
    assert page.count("<svg") >= 4
    assert 'class="bar' in page
    assert "command: 4" in page


def test_search_page_highlights_and_explains(browser: TestClient, settings: Settings) -> None:
    seed(browser, settings, n=2)
    page = browser.get("/search?q=pytest&mode=keyword").text
    assert "<mark>" in page
    assert "Why this ranked" in page


def test_search_empty_state(browser: TestClient) -> None:
    assert "Type what you are looking for" in browser.get("/search").text


@pytest.mark.sqlite_only("no database: highlight() over a string")
def test_highlight_escapes_everything_but_its_marks() -> None:
    out = str(highlight('<b onclick="x">Tests</b> & tests', "tests"))
    assert (
        out == "&lt;b onclick=&#34;x&#34;&gt;<mark>Tests</mark>&lt;/b&gt; &amp; <mark>tests</mark>"
    )
    assert str(highlight("a&b", "amp")) == "a&amp;b"


@pytest.mark.sqlite_only("no database: rich() over a string")
def test_rich_keeps_only_emphasis() -> None:
    assert (
        str(rich("<mark>x</mark><script>y</script>"))
        == "<mark>x</mark>&lt;script&gt;y&lt;/script&gt;"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, "/"),
        ("/memories?x=1", "/memories?x=1"),
        ("//evil", "/"),
        ("https://e.x", "/"),
        ("/\\evil", "/"),
    ],
)
@pytest.mark.sqlite_only("no database: safe_next() over a string")
def test_safe_next(raw: Any, expected: str) -> None:
    assert safe_next(raw) == expected


@pytest.mark.sqlite_only("no database: bar_chart() over given bars")
def test_charts_escape_labels_and_scale() -> None:
    svg = str(bar_chart([Bar("<b>x</b>", 10), Bar("y", 5)], title="t<"))
    assert "<b>" not in svg and "&lt;b&gt;" in svg and "t&lt;" in svg
    widths = [
        float(w)
        for w in re.findall(r'<rect class="bar[^"]*" x="[\d.]+" y="[\d.]+" width="([\d.]+)"', svg)
    ]
    assert widths[0] == pytest.approx(2 * widths[1])
    assert str(column_chart([], title="empty")).startswith("<svg")
    assert "50.0%" in str(gauge(0.5, title="g"))


def test_memory_page_shows_relations_and_versions(browser: TestClient, settings: Settings) -> None:
    h = bearer(settings)
    old = browser.post(
        "/api/memories",
        json={"kind": "fact", "content": "The API listens on port 8000", "scope": "global"},
        headers=h,
    ).json()["id"]
    new = browser.post(
        "/api/memories",
        json={
            "kind": "fact",
            "content": "The API listens on port 9000 since v2",
            "scope": "global",
        },
        headers=h,
    ).json()["id"]
    related = browser.post(
        f"/api/memories/{new}/relations", json={"to_id": old, "kind": "updates"}, headers=h
    )
    assert related.status_code in (200, 201)
    page = browser.get(f"/memories/{old}").text
    assert f'A newer version replaces this one: <a href="/memories/{new}">' in page
    assert "superseded" in page and "port 9000 since v2" in page
    newest = browser.get(f"/memories/{new}").text
    assert "This memory <strong>updates</strong>" in newest
    assert newest.count('<li aria-current="true">') == 1
    assert browser.get("/memories/999999").status_code == 404


def test_observation_archive_restore_forget_from_the_feed(
    browser: TestClient, settings: Settings
) -> None:
    seed(browser, settings, n=1)
    csrf = csrf_of(browser.get("/").text)
    h = {"X-Cairn-CSRF": csrf, "HX-Request": "true"}
    archived = browser.post("/feed/observation/1/archive", headers=h)
    assert archived.status_code == 200
    assert "badge archived" in archived.text and "Restore" in archived.text
    assert browser.get("/api/observations/1", headers=bearer(settings)).json()["archived"] is True
    assert 'id="observation-1"' not in browser.get("/").text  # archived items leave the feed
    restored = browser.post("/feed/observation/1/restore", headers=h)
    assert "badge archived" not in restored.text and "Archive" in restored.text
    gone = browser.post("/feed/observation/1/forget", headers=h)
    assert "was forgotten" in gone.text
    assert browser.get("/api/observations/1", headers=bearer(settings)).status_code == 404
    assert browser.post("/feed/observation/1/explode", headers=h).status_code == 404


NASTY = ["", "-1", "abc", "9" * 40, "1.observation.x", "%00", "' OR 1=1 --", "<script>", "\u202e"]


@pytest.mark.parametrize("value", NASTY)
def test_pages_never_fail_on_odd_query_values(browser: TestClient, value: str) -> None:
    params = (
        "project",
        "type",
        "cursor",
        "q",
        "mode",
        "kind",
        "limit",
        "state",
        "importance",
        "pinned",
        "budget",
        "source",
        "query",
        "at",
        "status",
    )
    for path in ("/", "/feed/items", "/search", "/sessions", "/memories", "/context", "/timeline"):
        response = browser.get(path, params={p: value for p in params})
        assert response.status_code == 200, (path, value, response.text[:200])
        assert "<script>" not in response.text.replace('<script src="', "")


def test_session_page_shows_summary_checkpoint_and_one_timeline(
    browser: TestClient, settings: Settings
) -> None:
    seed(browser, settings, n=2)
    h = bearer(settings)
    done = browser.post(
        "/api/sessions/s-1/summarize",
        json={"last_assistant_message": "Fixed the flaky test; next: add a regression test."},
        headers=h,
    )
    assert done.status_code in (200, 201), done.text
    checkpoint = browser.post("/api/sessions/s-1/checkpoint", json={"trigger": "manual"}, headers=h)
    assert checkpoint.status_code in (200, 201), checkpoint.text
    assert "No memory was saved" in browser.get("/sessions/s-1").text
    body = {"project": "/p/app", "kind": "lesson", "content": f"Run the flaky test twice {XSS}"}
    saved = browser.post("/api/memories", json=body, headers=h).json()  # while s-1 works
    page = browser.get("/sessions/s-1").text
    assert "No summary yet" not in page
    assert "No checkpoint" not in page
    memories = page[page.index('<ul class="saved">') :]
    assert f'href="/memories/{saved["id"]}"' in memories and XSS not in memories
    timeline = page[page.index('<ol class="timeline">') :]
    # The prompt came first, then the two observations, in time order.
    assert (
        timeline.index("prompt 1") < timeline.index("ran tests 0") < timeline.index("ran tests 1")
    )
    assert browser.get("/sessions/nope").status_code == 404


def test_session_page_for_an_id_with_slashes(browser: TestClient, settings: Settings) -> None:
    h = bearer(settings)
    sid = "team/alpha/42"
    made = browser.post("/api/sessions", json={"session_id": sid, "project": "/repo"}, headers=h)
    assert made.status_code == 201, made.text
    for path in ("/sessions/team/alpha/42", "/sessions/team%2Falpha%2F42"):
        page = browser.get(path)
        assert page.status_code == 200 and sid in page.text, path


def test_timeline_centres_on_an_item_and_pages_in_time(
    browser: TestClient, settings: Settings
) -> None:
    h = bearer(settings)
    items = [
        {
            "project": "/p/tl",
            "type": "note",
            "title": f"note {i}",
            "created_at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
        }
        for i in range(80)
    ]
    assert (
        browser.post("/api/observations", json={"observations": items}, headers=h).status_code
        == 201
    )
    at = 1767225600000 + 40 * 1000  # note 40
    page = browser.get(f"/timeline?project=/p/tl&at={at}&focus=observation-41").text
    titles = re.findall(r'class="item-title">([^<]+)<', page)
    assert titles[0] == "note 65" and titles[-1] == "note 16"  # 25 after, 25 up to and including
    assert 'aria-current="true"' in page and "note 40" in page
    earlier = re.search(r'href="(/timeline\?[^"]+)">Earlier', page)
    assert earlier is not None
    older = browser.get(earlier.group(1).replace("&amp;", "&")).text
    assert re.findall(r'class="item-title">([^<]+)<', older)[-1] == "note 0"


def test_search_says_when_semantic_falls_back_to_keywords(
    browser: TestClient, settings: Settings
) -> None:
    seed(browser, settings, n=1)
    page = browser.get("/search?q=pytest&mode=semantic").text
    assert "these are keyword results" in page  # embeddings are off in unit tests
    assert "keyword results" not in browser.get("/search?q=pytest&mode=keyword").text


def test_long_session_says_what_it_leaves_out(browser: TestClient, settings: Settings) -> None:
    h = bearer(settings)
    browser.post("/api/sessions", json={"session_id": "long", "project": "/p/long"}, headers=h)
    batch = [
        {"project": "/p/long", "session_id": "long", "type": "command", "title": f"step {i}"}
        for i in range(500)
    ]
    for _ in range(2):
        assert (
            browser.post("/api/observations", json={"observations": batch}, headers=h).status_code
            == 201
        )
    page = browser.get("/sessions/long").text
    assert "Showing the latest 500 of 1000 observations" in page
    assert page.count('class="tl-observation"') == 500


def _selected(page: str, select_id: str) -> str:
    """The value of the option a <select> shows first (the `selected` one, else its first)."""
    block = page.split(f'id="{select_id}"', 1)[1].split("</select>", 1)[0]
    chosen = re.search(r'<option value="([^"]*)" selected', block)
    first = re.search(r'<option value="([^"]*)"', block)
    assert first is not None
    return (chosen or first).group(1)


def test_the_new_memory_form_defaults_to_a_project_and_an_inferred_kind(
    browser: TestClient, settings: Settings
) -> None:
    """Typed without touching the selects, a memory belongs to the project at hand and takes the
    kind its words say, as over REST: it was a global lesson, injected into every project."""
    for project, at in (("/repo/older", "2026-01-01T10:00:00Z"), ("/repo/newer", None)):
        observation = {"project": project, "session_id": "s", "type": "note", "title": "x"}
        if at:
            observation["created_at"] = at
        made = browser.post(
            "/api/observations", json={"observations": [observation]}, headers=bearer(settings)
        )
        assert made.status_code in (200, 201), made.text
    page = browser.get("/memories").text
    assert _selected(page, "new-project") == "/repo/newer"  # the latest activity
    assert _selected(page, "new-kind") == ""  # automatic
    came_from = {"referer": f"{BASE_URL}/search?q=x&project=/repo/older"}
    assert _selected(browser.get("/memories", headers=came_from).text, "new-project") == (
        "/repo/older"
    )
    filtered = browser.get("/memories?project=__global__").text
    assert _selected(filtered, "new-project") == "__global__"
    h = {"X-Cairn-CSRF": csrf_of(page), "HX-Request": "true"}
    text = "We decided to keep invoices in integer cents because floats lost a cent in totals"
    saved = browser.post(
        "/memories", data={"content": text, "kind": "", "project": "/repo/newer"}, headers=h
    )
    assert saved.status_code == 200 and "Saved memory" in saved.text
    listed = browser.get("/api/memories?project=/repo/newer", headers=bearer(settings)).json()
    (memory,) = listed["items"]
    assert memory["kind"] == "decision" and memory["scope"] == "project"


def test_a_failed_command_is_marked_in_the_feed(browser: TestClient, settings: Settings) -> None:
    rows = [
        {"project": "/p/app", "type": "command", "title": "Run: make deploy (exit 2)"},
        {"project": "/p/app", "type": "command", "title": "Run: make lint"},
        {"project": "/p/app", "type": "note", "title": "not a command (exit 3)"},
    ]
    made = browser.post("/api/observations", json={"observations": rows}, headers=bearer(settings))
    assert made.status_code in (200, 201), made.text
    page = browser.get("/").text
    items = re.findall(r'<li class="feed-item[^"]*"[^>]*>.*?</summary>', page, re.DOTALL)
    marked = [i for i in items if 'class="badge failed"' in i]
    assert (
        len(marked) == 1
        and "make deploy" in marked[0]
        and "feed-item kind-observation failed" in marked[0]
    )
    assert 'title="The command exited with 2"' in marked[0]


def test_login_errors_show_commands_as_code_not_backticks(anon_client: TestClient) -> None:
    used = anon_client.get("/login/link/not-a-real-nonce", headers=HTML)
    assert used.status_code == 401
    assert "<code>cairn open</code>" in used.text and "`" not in used.text.split("<main", 1)[-1]


def test_an_old_login_link_opened_while_logged_in_goes_to_the_dashboard(
    browser: TestClient,
) -> None:
    again = browser.get("/login/link/already-used-nonce", headers=HTML, follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == "/"


def test_the_login_rate_limit_answers_a_browser_with_the_form(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    del settings  # the test's home and database, prepared in the environment load_settings reads
    from tests.conftest import running_app
    from worker.settings import load_settings

    monkeypatch.setenv("CAIRN_RATE_LIMIT_LOGIN", "2/minute")
    with running_app(load_settings(), authenticated=False) as anon:
        tries = [anon.post("/login", data={"token": "wrong"}, headers=HTML) for _ in range(3)]
        assert [t.status_code for t in tries] == [401, 401, 429]
        limited = tries[-1]
        assert limited.headers["content-type"].startswith("text/html")
        assert "Too many login attempts: try again in" in limited.text
        assert 'name="token"' in limited.text and int(limited.headers["Retry-After"]) >= 1
        api = anon.post("/login", data={"token": "wrong"})  # no Accept: html: JSON as before
        assert api.status_code == 429 and api.json()["error"]["code"] == "rate_limited"
