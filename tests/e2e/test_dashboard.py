"""The dashboard in a real headless Chromium (Debian package) against a real worker process.

Every test checks that no request left 127.0.0.1, that nothing violated the CSP and that no
dialog opened; each page is saved as a screenshot under tests/artifacts/ (ignored by git).
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ModuleWorkers
from tests.e2e.worker_process import WorkerProcess

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [
    pytest.mark.both_backends,
    pytest.mark.e2e,
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="needs /usr/bin/chromium (Debian package `chromium`; .ci/run installs it)",
    ),
]

# Collected in the page before any of our scripts run (init scripts bypass the page's CSP).
WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""

XSS_PAYLOADS = [
    "<script>document.body.dataset.pwned='script'</script>",
    '<img src=x id="xss-img" onerror="document.body.dataset.pwned=\'img\'">',
    '"><svg id="xss-svg" onload="document.body.dataset.pwned=\'svg\'">',
    "javascript:alert(1)",
    '<iframe id="xss-frame" src="javascript:alert(\'frame\')"></iframe>',
    "{{ 7*7 }} {% raw %}${7*7}{% endraw %}",
    "</textarea><script>alert('ta')</script>",
    '<a id="xss-link" href="javascript:alert(\'a\')">click</a>',
    '<div hx-get="/api/status" hx-trigger="load" id="xss-htmx">htmx</div>',
    "<style>body{display:none}</style>",
    "' onmouseover='alert(1)' x='",
    "<mark onclick=alert(1)>marked</mark>",
]


@dataclass
class Watch:
    external: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture
def live_worker(
    request: pytest.FixtureRequest, backend: str, module_workers: ModuleWorkers
) -> WorkerProcess:
    """One worker per module and backend (on postgres over one database of the run's server
    for the module), which the module's tests share in order; stopped after the module."""
    # Every test logs in through the form: lift the login rate limit (20/minute by default).
    return module_workers.worker(request, backend, {"CAIRN_RATE_LIMIT_LOGIN": "1000/minute"})


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture
def page(chromium: Any, watch: Watch) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(WATCH)

    def guard(route: Any) -> None:
        host = urllib.parse.urlsplit(route.request.url).hostname
        if host == "127.0.0.1":
            route.continue_()
        else:
            watch.external.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.set_default_timeout(10_000)
    # Never use string predicates (wait_for_function): they need eval, which the CSP forbids.
    page.on("console", lambda m: watch.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: watch.errors.append(str(e)))

    def on_dialog(dialog: Any) -> None:
        watch.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        yield page
        assert watch.external == [], f"requests left 127.0.0.1: {watch.external}"
        assert watch.dialogs == [], f"dialogs opened: {watch.dialogs}"
        assert watch.errors == [], f"page errors: {watch.errors}"
        csp = [c for c in watch.console if "Content Security Policy" in c]
        assert csp == [], f"CSP violations: {csp}"
        if not page.is_closed():
            assert page.evaluate("window.__csp") == []
    finally:
        context.close()


def api(worker: WorkerProcess, method: str, path: str, body: Any = None) -> Any:
    status, payload = worker.request(method, path, body)
    assert status < 300, (method, path, status, payload)
    return payload


def login(page: Any, worker: WorkerProcess, next_path: str = "/") -> None:
    page.goto(worker.url + next_path)
    assert page.locator("h1").inner_text() == "Log in to Cairn"
    page.get_by_label("Token").fill(worker.token)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(re.escape(worker.url + next_path.split("?")[0])))


def shot(page: Any, name: str, *, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=full_page)


def settled(page: Any, selector: str) -> Any:
    """The element once htmx has settled it (its new content is wired up only then)."""
    locator = page.locator(f"{selector}:not(.htmx-added):not(.htmx-settling)")
    locator.wait_for()
    return locator


def observation(project: str, title: str, **extra: Any) -> dict[str, Any]:
    return {"project": project, "type": "command", "title": title, **extra}


# --------------------------------------------------------------------------- login


def test_login_page_then_token_then_logout(page: Any, live_worker: WorkerProcess) -> None:
    response = page.goto(live_worker.url + "/stats")
    assert response.status == 401
    shot(page, "login")
    page.get_by_label("Token").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    assert "not right" in page.locator(".error").inner_text()
    page.get_by_label("Token").fill(live_worker.token)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(live_worker.url + "/stats")  # back where we were going
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/login$"))
    assert page.goto(live_worker.url + "/").status == 401


def test_one_time_link_logs_in_once(page: Any, live_worker: WorkerProcess) -> None:
    link = api(live_worker, "POST", "/api/login-links", {"next": "/memories"})["url"]
    page.goto(link)
    page.wait_for_url(live_worker.url + "/memories")
    assert page.locator("h1").inner_text() == "Memories"
    page.context.clear_cookies()
    assert page.goto(link).status == 401
    assert "already used" in page.locator(".error").inner_text()


# --------------------------------------------------------------------------- feed


def test_feed_is_live_filterable_pausable(page: Any, live_worker: WorkerProcess) -> None:
    project = "/work/feed-demo"
    api(live_worker, "POST", "/api/observations", observation(project, "seed item", body="first"))
    login(page, live_worker)
    page.get_by_label("Project").select_option(project)
    page.wait_for_url(re.compile(r"project="))
    page.locator("#live-status[data-state='live']").wait_for()
    page.evaluate("window.__noReload = true")

    created = api(
        live_worker,
        "POST",
        "/api/observations",
        observation(project, "compiled the parser", body="make parser\nok", files=["src/p.c"]),
    )
    item = page.locator(f"#observation-{created['id']}")
    item.wait_for(timeout=5000)
    assert "compiled the parser" in item.inner_text()
    assert page.evaluate("window.__noReload") is True  # arrived without a reload

    # Other projects' events are filtered out.
    other = api(live_worker, "POST", "/api/observations", observation("/elsewhere", "not here"))
    memory = api(
        live_worker,
        "POST",
        "/api/memories",
        {"kind": "decision", "content": "live memories show up too", "project": project},
    )
    page.locator(f"#memory-{memory['id']}").wait_for(timeout=5000)
    assert page.locator(f"#observation-{other['id']}").count() == 0

    # Expand an item to its details.
    item.locator("summary").first.click()
    assert "make parser" in item.locator(".item-body").inner_text()
    assert "src/p.c" in item.locator(".item-body").inner_text()

    # Archive from the page; a restore made elsewhere (the API) shows up live.
    settled(page, f"#observation-{created['id']}").get_by_role("button", name="Archive").click()
    page.locator(f"#observation-{created['id']} .badge.archived").wait_for()
    api(live_worker, "POST", f"/api/observations/{created['id']}/restore")
    expect(page.locator(f"#observation-{created['id']} .badge.archived")).to_have_count(0)
    expect(page.locator(f"#observation-{created['id']}")).to_have_count(1)

    # Pause holds new events back; resume shows them.
    page.get_by_role("button", name="Pause").click()
    held = api(live_worker, "POST", "/api/observations", observation(project, "held back"))
    page.locator("#live-status", has_text="1 new").wait_for(timeout=5000)
    assert page.locator(f"#observation-{held['id']}").count() == 0
    page.get_by_role("button", name="Resume").click()
    page.locator(f"#observation-{held['id']}").wait_for(timeout=5000)

    # Filter by type: only prompts.
    page.get_by_label("Type").select_option("prompt")
    page.wait_for_url(re.compile(r"type=prompt"))
    page.locator("#live-status[data-state='live']").wait_for()
    assert page.locator(".feed-item").count() == 0
    codex = {"session_id": "feed-s1", "project": project, "meta": {"source": "codex"}}
    api(live_worker, "POST", "/api/sessions", codex)
    prompt = api(
        live_worker, "POST", "/api/prompts", {"session_id": "feed-s1", "text": "add tests"}
    )
    page.locator(f"#prompt-{prompt['id']}").wait_for(timeout=5000)
    expect(page.locator(f"#prompt-{prompt['id']} .badge.agent")).to_have_text("Codex CLI")
    api(live_worker, "POST", "/api/observations", observation(project, "a command, filtered out"))
    time.sleep(0.5)
    assert page.locator(".feed-item").count() == 1
    page.get_by_label("Type").select_option("")
    page.wait_for_url(re.compile(r"type=(&|$)"))

    # Filter by agent: a live item of another agent's session stays out, Codex's comes in.
    page.get_by_label("Agent").select_option("codex")
    page.wait_for_url(re.compile(r"agent=codex"))
    page.locator("#live-status[data-state='live']").wait_for()
    claude = {"session_id": "feed-s2", "project": project, "meta": {"source": "claude-code"}}
    api(live_worker, "POST", "/api/sessions", claude)
    with page.expect_response(re.compile(r"/feed/item/observation/\d+\?")) as fetched:
        theirs = api(
            live_worker,
            "POST",
            "/api/observations",
            observation(project, "by Claude Code", session_id="feed-s2"),
        )
    assert f"/observation/{theirs['id']}?" in fetched.value.url and fetched.value.text() == ""
    ours = api(
        live_worker,
        "POST",
        "/api/observations",
        observation(project, "by Codex", session_id="feed-s1"),
    )
    expect(page.locator(f"#observation-{ours['id']} .badge.agent")).to_have_text("Codex CLI")
    assert page.locator(f"#observation-{theirs['id']}").count() == 0
    assert set(page.locator("#feed-items .badge.agent").all_inner_texts()) == {"Codex CLI"}
    page.get_by_label("Agent").select_option("")
    page.wait_for_url(re.compile(r"agent=(&|$)"))
    shot(page, "feed")


def test_a_failed_command_stands_out_in_the_feed(page: Any, live_worker: WorkerProcess) -> None:
    failed = observation("/work/red", "Run: npm test (exit 1)", body="exit code: 1")
    passed = observation("/work/red", "Run: npm run lint")
    api(live_worker, "POST", "/api/observations", {"observations": [failed, passed]})
    login(page, live_worker, "/?project=/work/red")
    red = page.locator("li.feed-item.failed")
    red.first.wait_for()
    assert red.count() == 1 and "npm test" in red.inner_text()
    badge = red.locator(".badge.failed")
    assert badge.inner_text() == "failed" and badge.get_attribute("title") == (
        "The command exited with 1"
    )
    colour = badge.evaluate("e => getComputedStyle(e).color")
    assert colour != page.locator("li.feed-item:not(.failed) .badge").first.evaluate(
        "e => getComputedStyle(e).color"
    )


def test_login_messages_read_as_a_person_would(page: Any, live_worker: WorkerProcess) -> None:
    page.goto(live_worker.url + "/login/link/a-link-long-gone")
    alert = page.get_by_role("alert")
    assert "`" not in alert.inner_text()
    assert alert.locator("code", has_text="cairn open").count() == 1
    login(page, live_worker, "/stats")
    page.goto(live_worker.url + "/login/link/a-link-long-gone")  # old link, logged in
    page.wait_for_url(live_worker.url + "/")
    assert page.locator("h1").first.inner_text() != "Log in to Cairn"


def test_feed_loads_older_pages(page: Any, live_worker: WorkerProcess) -> None:
    project = "/work/many"
    api(
        live_worker,
        "POST",
        "/api/observations",
        {"observations": [observation(project, f"step {i:03d}") for i in range(120)]},
    )
    login(page, live_worker, f"/?project={urllib.parse.quote(project, safe='')}")
    assert page.locator(".feed-item").count() == 50
    page.get_by_role("button", name="Load older").click()
    expect(page.locator(".feed-item")).to_have_count(100)
    page.get_by_role("button", name="Load older").click()
    expect(page.locator(".feed-item")).to_have_count(120)
    assert page.get_by_role("button", name="Load older").count() == 0
    titles = page.locator(".feed-item .item-title").all_inner_texts()
    assert titles[0] == "step 119" and titles[-1] == "step 000"


# --------------------------------------------------------------------------- search


def test_search_highlights_and_explains(page: Any, live_worker: WorkerProcess) -> None:
    project = "/work/search-demo"
    api(live_worker, "POST", "/api/sessions", {"session_id": "search-s1", "project": project})
    api(
        live_worker,
        "POST",
        "/api/observations",
        observation(
            project,
            "Flaky websocket reconnect fixed with exponential backoff",
            body="the websocket client now retries with backoff",
            session_id="search-s1",
        ),
    )
    api(live_worker, "POST", "/api/observations", observation(project, "updated the changelog"))
    login(page, live_worker, "/search")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("websocket backoff")
    page.keyboard.press("Enter")
    hit = page.locator(".hit").first
    hit.wait_for()
    assert "websocket" in hit.locator("mark").first.inner_text().lower()
    assert page.locator(".hit").count() == 1
    why = hit.locator("details.why")
    why.locator("summary").click()
    assert why.locator("table.signals tr").count() >= 2
    shot(page, "search")
    hit.get_by_role("link", name="Session").click()
    page.wait_for_url(re.compile(r"/sessions/search-s1"))
    assert "Flaky websocket" in page.locator("ol.timeline").inner_text()
    shot(page, "session")
    page.go_back()
    page.locator(".hit").first.get_by_role("link", name="Timeline").click()
    page.wait_for_url(re.compile(r"/timeline\?"))
    assert "Flaky websocket" in page.locator(".feed-item.focus").inner_text()
    shot(page, "timeline")
    page.get_by_role("link", name="Sessions").click()
    page.locator("table.list", has_text="search-s1").wait_for()
    shot(page, "sessions")


def test_search_with_no_match_says_so(page: Any, live_worker: WorkerProcess) -> None:
    login(page, live_worker, "/search?q=zzzqqqxxy&mode=keyword")
    assert "Nothing relevant" in page.locator("#search-results").inner_text()


# --------------------------------------------------------------------------- memories


def test_memory_edit_pin_archive_restore_persist(page: Any, live_worker: WorkerProcess) -> None:
    project = "/work/mem-demo"
    api(live_worker, "POST", "/api/observations", observation(project, "makes the project exist"))
    memory = api(
        live_worker,
        "POST",
        "/api/memories",
        {"kind": "fact", "content": "The CI cache key uses the lockfile hash", "project": project},
    )
    mid = memory["id"]
    login(page, live_worker, f"/memories?project={urllib.parse.quote(project, safe='')}")
    card = page.locator(f"#memory-{mid}")

    card.get_by_role("button", name="Edit").click()
    settled(page, f"#memory-{mid}.editing")
    page.get_by_label("Content").fill(
        "The CI cache key uses the lockfile hash and the Python version"
    )
    page.locator(f"#memory-{mid}").get_by_role("button", name="Save").click()
    page.locator(f"#memory-{mid} .content", has_text="Python version").wait_for()

    settled(page, f"#memory-{mid}").get_by_role("button", name="Pin").click()
    page.locator(f"#memory-{mid} .badge.pin").wait_for()
    settled(page, f"#memory-{mid}").get_by_label("Importance").select_option("5")
    page.locator(f"#memory-{mid} .importance", has_text="5/5").wait_for()

    settled(page, f"#memory-{mid}").get_by_role("button", name="Archive").click()
    page.locator(f"#memory-{mid} .badge.archived").wait_for()

    page.reload()
    assert page.locator(f"#memory-{mid}").count() == 0  # archived items leave the live list
    page.get_by_label("State").select_option("archived")
    page.get_by_role("button", name="Filter").click()
    card = page.locator(f"#memory-{mid}")
    card.wait_for()
    assert card.locator(".badge.archived").count() == 1
    card.get_by_role("button", name="Restore").click()
    page.locator(f"#memory-{mid}").get_by_role("button", name="Archive").wait_for()

    page.goto(live_worker.url + f"/memories/{mid}")
    card = page.locator(f"#memory-{mid}")
    assert "Python version" in card.locator(".content").inner_text()
    assert card.locator(".badge.pin").count() == 1
    assert card.locator(".badge.archived").count() == 0
    assert "5/5" in card.locator(".importance").inner_text()
    stored = api(live_worker, "GET", f"/api/memories/{mid}")
    assert stored["pinned"] is True and stored["importance"] == 5 and stored["archived"] is False
    shot(page, "memory")


def test_memory_create_and_forget_with_confirmation(page: Any, live_worker: WorkerProcess) -> None:
    login(page, live_worker, "/memories")
    new = page.locator("details.new-memory")
    if new.get_attribute("open") is None:
        new.locator("summary").click()
    page.get_by_label("What should agents remember?").fill("Prefer ruff over flake8 in new repos")
    page.get_by_label("Kind", exact=True).first.select_option("preference")
    page.get_by_role("button", name="Save memory").click()
    saved = page.locator("#new-memory-result.ok")
    saved.wait_for()
    mid = int(re.search(r"#(\d+)", saved.inner_text()).group(1))  # type: ignore[union-attr]
    card = settled(page, f"#memory-{mid}")
    assert page.get_by_label("What should agents remember?").input_value() == ""
    shot(page, "memories")
    card.locator("details.confirm summary").click()
    card.get_by_role("button", name="Yes, forget it").click()
    page.locator(f"#memory-{mid}", has_text="was forgotten").wait_for()
    assert live_worker.request("GET", f"/api/memories/{mid}")[0] == 404
    page.reload()
    assert page.locator(f"#memory-{mid}").count() == 0


def test_a_new_memory_typed_as_is_belongs_to_the_project_at_hand(
    page: Any, live_worker: WorkerProcess
) -> None:
    """Nothing chosen but the text: the memory goes to the project with the latest activity, with
    the kind its words say (it was a global lesson, injected into every other project)."""
    project = "/work/first-day"
    api(live_worker, "POST", "/api/observations", {"observations": [observation(project, "ls")]})
    login(page, live_worker, "/memories")
    new = page.locator("details.new-memory")
    if new.get_attribute("open") is None:
        new.locator("summary").click()
    assert page.locator("#new-project").input_value() == project
    assert page.locator("#new-kind").input_value() == ""
    text = "We decided the first-day checklist lives in docs/onboarding.md because wikis rot"
    page.get_by_label("What should agents remember?").fill(text)
    page.get_by_role("button", name="Save memory").click()
    saved = page.locator("#new-memory-result.ok")
    saved.wait_for()
    mid = int(re.search(r"#(\d+)", saved.inner_text()).group(1))  # type: ignore[union-attr]
    stored = api(live_worker, "GET", f"/api/memories/{mid}")
    assert stored["project"] == project and stored["scope"] == "project"
    assert stored["kind"] == "decision"


# --------------------------------------------------------------------------- context, stats, settings


def test_context_preview_stays_within_budget(page: Any, live_worker: WorkerProcess) -> None:
    project = "/work/ctx-demo"
    api(
        live_worker,
        "POST",
        "/api/observations",
        {
            "observations": [
                observation(project, f"edited module {i} of the billing service", body="x " * 50)
                for i in range(40)
            ]
        },
    )
    api(
        live_worker,
        "POST",
        "/api/memories",
        {
            "kind": "decision",
            "content": "Billing amounts are integers in cents",
            "project": project,
            "importance": 5,
            "pinned": True,
        },
    )
    login(page, live_worker, "/context")
    page.get_by_label("Project").select_option(project)
    page.get_by_label("Budget (tokens)").fill("200")
    page.get_by_role("button", name="Preview").click()
    meter = page.locator("#budget-meter")
    meter.wait_for()
    used = int(meter.get_attribute("value") or "0")
    budget = int(meter.get_attribute("max") or "0")
    assert budget == 200
    assert 0 < used <= budget
    assert page.locator("tr.context-item").count() >= 1
    assert "Billing amounts are integers in cents" in page.locator("#context-text").inner_text()
    shot(page, "context")


def test_stats_has_svg_charts_with_data(page: Any, live_worker: WorkerProcess) -> None:
    api(
        live_worker,
        "POST",
        "/api/observations",
        {
            "observations": [
                {"project": "/work/stats", "type": t, "title": f"{t} {i}"}
                for i in range(3)
                for t in ("command", "file_write", "research")
            ]
        },
    )
    login(page, live_worker, "/stats")
    charts = page.locator("svg.chart")
    assert charts.count() >= 5
    heights = page.eval_on_selector_all(
        "svg.column rect.bar", "els => els.map(e => parseFloat(e.getAttribute('height')))"
    )
    assert max(heights) > 0
    assert page.locator("svg.bars title", has_text="file_write").count() >= 1
    # Every chart label is drawn at a readable size on a laptop screen (they were ~7 px).
    sizes = page.eval_on_selector_all(
        "svg.chart text",
        "els => els.map(e => e.getBoundingClientRect().height).filter(h => h > 0)",
    )
    assert sizes and min(sizes) >= 10, sorted(sizes)[:5]
    caption = page.locator("#c-day + p").inner_text()
    assert re.fullmatch(r"[\d,]+ in the last 30 days, [\d,]+ of them in the last 7\.", caption)
    shot(page, "stats")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "stats-phone")


def test_what_was_given_and_used_shows_on_the_memory_session_and_stats_pages(
    page: Any, live_worker: WorkerProcess
) -> None:
    """Learning from use on the dashboard: a memory given at a prompt and acted on (its file
    read) is 'used' on its page with the evidence, marked used on its session's page, and the
    stats page charts the share of injected items used."""
    project = "/work/use-dash"
    for other in ("Deploys go out through GitHub Actions", "Emails are sent with Postmark"):
        api(live_worker, "POST", "/api/memories", {"content": other, "project": project})
    memory = api(
        live_worker,
        "POST",
        "/api/memories",
        {
            "content": "Invoice exports are UTF-8 with a BOM, see billing/exports.py",
            "project": project,
        },
    )
    prompt = {
        "session_id": "dash-use",
        "project": project,
        "text": "Are the invoice exports UTF-8 with a BOM?",
        "context": {},
    }
    asked = api(live_worker, "POST", "/api/prompts", prompt)
    assert memory["id"] in [i["id"] for i in asked["context"]["items"]], asked
    read = {"session_id": "dash-use", "type": "research", "title": "Read billing/exports.py"}
    api(
        live_worker,
        "POST",
        "/api/observations",
        {"project": project, "files": ["billing/exports.py"], **read},
    )
    api(live_worker, "POST", "/api/sessions/dash-use/summarize", {"last_assistant_message": "Yes."})

    login(page, live_worker, f"/memories/{memory['id']}")
    given = page.locator("dt", has_text="Given").locator("xpath=following-sibling::dd[1]")
    text = given.inner_text()
    assert text.startswith("shown 1 time, used 1; last used") and "read billing/exports.py" in text
    given.get_by_role("link", name="session").click()
    page.wait_for_url(re.compile(re.escape(live_worker.url + "/sessions/dash-use")))
    row = page.locator("ul.given li.use-used")
    assert row.count() == 1 and f"memory #{memory['id']}" in row.inner_text()
    assert row.locator(".badge").inner_text() == "used"
    page.goto(live_worker.url + "/stats")
    caption = page.locator("#c-use + p").inner_text()
    assert re.search(r"[\d,]+ of [\d,]+ injected items were used in the last 30 days", caption)
    assert page.locator("#c-use ~ svg.chart rect.bar").count() == 30
    shot(page, "stats-use")


def test_settings_runs_decay_and_compression(page: Any, live_worker: WorkerProcess) -> None:
    login(page, live_worker, "/settings")
    assert live_worker.token not in page.content()
    for job in ("decay", "compress"):
        button = page.locator(f"#run-{job}")
        if button.count() == 0:
            continue
        page.locator(f"#preview-{job}").click()
        page.locator(f"#{job}-result", has_text="nothing changed").wait_for()
        settled(page, f"#{job}-result")
        button.click()
        expect(page.locator(f"#{job}-result")).not_to_contain_text("nothing changed")
        expect(page.locator(f"#{job}-result")).to_contain_text("finished")
    shot(page, "settings")


def test_dark_mode_and_phone_width(chromium: Any, live_worker: WorkerProcess) -> None:
    context = chromium.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    try:
        page = context.new_page()
        login(page, live_worker)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(21, 23, 26)"
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390
        shot(page, "feed-dark-phone", full_page=False)
    finally:
        context.close()


def test_every_control_is_labelled(page: Any, live_worker: WorkerProcess) -> None:
    project = "/work/a11y"
    api(live_worker, "POST", "/api/observations", observation(project, "labelled"))
    mid = api(
        live_worker, "POST", "/api/memories", {"kind": "fact", "content": "x", "project": project}
    )["id"]
    login(page, live_worker)
    q = urllib.parse.quote(project, safe="")
    for path in (
        "/",
        "/search?q=labelled",
        "/sessions",
        "/memories",
        f"/memories/{mid}",
        f"/context?project={q}",
        "/stats",
        "/settings",
        f"/timeline?project={q}",
    ):
        page.goto(live_worker.url + path)
        unlabelled = page.eval_on_selector_all(
            "input:not([type=hidden]), select, textarea, button",
            """els => els.filter(e => {
                const named = (e.labels && e.labels.length) || e.getAttribute('aria-label')
                    || (e.tagName === 'BUTTON' && e.textContent.trim());
                return !named;
            }).map(e => e.outerHTML.slice(0, 80))""",
        )
        assert unlabelled == [], (path, unlabelled)
        assert page.locator("main h1").count() == 1, path
        assert page.locator("html[lang=en]").count() == 1


# --------------------------------------------------------------------------- XSS


def test_xss_corpus_renders_as_text_everywhere(page: Any, live_worker: WorkerProcess) -> None:
    project = "/work/xss <img src=x onerror=alert(1)>"
    sid = "xss-<script>alert(1)</script>"
    api(live_worker, "POST", "/api/sessions", {"session_id": sid, "project": project})
    for i, payload in enumerate(XSS_PAYLOADS):
        api(
            live_worker,
            "POST",
            "/api/observations",
            observation(
                project,
                f"xsscorpus {i} {payload}",
                body=f"body {payload}",
                files=[payload],
                tool_name=payload[:200],
                session_id=sid,
                meta={"html": payload},
            ),
        )
        api(
            live_worker, "POST", "/api/prompts", {"session_id": sid, "text": f"xsscorpus {payload}"}
        )
        api(
            live_worker,
            "POST",
            "/api/memories",
            {
                "kind": "note",
                "content": f"xsscorpus {i} {payload}",
                "project": project,
                "tags": [payload[:40]],
            },
        )
    login(page, live_worker)
    q = urllib.parse.quote
    pages = [
        "/",
        f"/?project={q(project, safe='')}",
        "/search?q=xsscorpus&mode=keyword&limit=60",
        "/sessions",
        f"/sessions/{q(sid, safe='')}",
        f"/memories?project={q(project, safe='')}",
        f"/timeline?project={q(project, safe='')}",
        f"/context?project={q(project, safe='')}&query=xsscorpus",
        "/stats",
        "/settings",
    ]
    for path in pages:
        page.goto(live_worker.url + path)
        if path != "/" and not path.startswith("/?"):
            # The feed keeps its event stream open, so it never becomes network-idle.
            page.wait_for_load_state("networkidle")
        for summary in page.locator("details summary").all()[:30]:
            summary.click()
        time.sleep(0.2)
        injected = page.evaluate(
            """() => ({
                pwned: document.body.dataset.pwned || null,
                ids: ['xss-img', 'xss-svg', 'xss-frame', 'xss-link', 'xss-htmx']
                    .filter(id => document.getElementById(id)),
                scripts: [...document.scripts].map(s => s.getAttribute('src')),
                styles: document.querySelectorAll('style').length,
                hidden: getComputedStyle(document.body).display,
            })"""
        )
        assert injected["pwned"] is None, path
        assert injected["ids"] == [], path
        assert injected["scripts"] == [
            "/static/vendor/htmx.min.js",
            "/static/vendor/sse.js",
            "/static/cairn.js",
        ], path
        assert injected["styles"] == 0, path
        assert injected["hidden"] != "none", path
    # The payloads are shown as text, verbatim.
    page.goto(live_worker.url + f"/memories?project={q(project, safe='')}")
    text = page.locator("#memory-list").inner_text()
    for payload in XSS_PAYLOADS:
        assert payload in text
    shot(page, "xss-memories")

    # A payload arriving live over SSE is rendered as text too.
    page.goto(live_worker.url + "/")
    page.locator("#live-status[data-state='live']").wait_for()
    live = api(
        live_worker,
        "POST",
        "/api/observations",
        observation(project, XSS_PAYLOADS[1], body=XSS_PAYLOADS[0]),
    )
    item = page.locator(f"#observation-{live['id']}")
    item.wait_for(timeout=5000)
    assert XSS_PAYLOADS[1] in item.locator(".item-title").inner_text()
    assert page.evaluate("document.getElementById('xss-img')") is None
    assert page.evaluate("document.body.dataset.pwned || null") is None


def test_json_event_data_is_never_swapped_raw(page: Any, live_worker: WorkerProcess) -> None:
    """The SSE payload is JSON; the page must fetch the escaped fragment instead of using it."""
    login(page, live_worker)
    page.locator("#live-status[data-state='live']").wait_for()
    assert page.locator("#feed-live").inner_html().strip() == ""
    created = api(live_worker, "POST", "/api/observations", observation("/work/j", "json check"))
    page.locator(f"#observation-{created['id']}").wait_for(timeout=5000)
    assert page.locator("#feed-live").inner_html().strip() == ""
    assert json.dumps(created["title"]) not in page.locator("#feed-items").inner_html()


# --------------------------------------------------------------------------- polish


def test_no_console_warnings_or_errors_on_any_page(
    page: Any, live_worker: WorkerProcess, watch: Watch
) -> None:
    """The vendored SSE extension matches htmx 2 (the htmx 1 one warned on every feed load)."""
    login(page, live_worker)
    page.locator("#live-status[data-state='live']").wait_for()  # the SSE extension ran
    # The login page answers 401 (by design), which Chromium logs as a failed load: start over.
    watch.console.clear()
    page.reload()
    page.locator("#live-status[data-state='live']").wait_for()
    for path in ("/search?q=x", "/sessions", "/memories", "/context", "/stats", "/settings"):
        page.goto(live_worker.url + path)
        page.wait_for_load_state("networkidle")
    page.goto(live_worker.url + "/")
    page.locator("#live-status[data-state='live']").wait_for()
    noisy = [m for m in watch.console if m.startswith(("warning:", "error:"))]
    assert noisy == [], noisy


def test_settings_are_grouped_into_a_short_page(page: Any, live_worker: WorkerProcess) -> None:
    login(page, live_worker, "/settings")
    groups = page.locator("details.config-group")
    titles = [t.strip() for t in groups.locator(".group-title").all_inner_texts()]
    assert len(titles) >= 6 and "Search and ranking" in titles and "Embeddings" in titles
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 2000, height  # one long table was ~5,000 px
    shot(page, "settings-grouped")
    search = groups.filter(has_text="Search and ranking")
    search.locator("summary").click()
    expect(search.locator("code", has_text="CAIRN_SEARCH_DEFAULT_LIMIT")).to_be_visible()


# --------------------------------------------------------------------------- team database outage


@pytest.mark.postgres
def test_a_page_during_a_database_outage_explains_and_reloads_once_it_is_back(
    page: Any, tmp_path: Path
) -> None:
    """A worker on a team database whose server is shut down: the page a browser opens says the
    database is unreachable (password masked) and reloads by itself once the server is back."""
    from tests import pg

    password = "hunter2-pw"  # the test server trusts loopback: any password connects
    with pg.throwaway_server() as server, server.database() as plain_url:
        url = plain_url.replace("://postgres@", f"://postgres:{password}@", 1)
        # HOME is the test's own already (conftest's autouse fixture).
        worker = WorkerProcess(home=tmp_path / ".cairn", env_extra={"CAIRN_DATABASE_URL": url})
        worker.start()
        try:
            login(page, worker, "/memories")
            assert page.locator("h1").inner_text() == "Memories"
            server.shut_down()
            try:
                response = page.goto(worker.url + "/memories")
                assert response is not None and response.status == 503
                heading = page.get_by_role("heading", level=1)
                assert heading.inner_text() == "The team database is unreachable"
                facts = page.locator("#database-down").inner_text()
                assert "postgresql://postgres:***@127.0.0.1:" in facts
                assert "replayed once the database answers" in facts
                assert password not in page.content()
                shot(page, "database-down")
                # The poll swaps the facts in again while the database is still down.
                with page.expect_response(re.compile(r"/database-status$")) as polled:
                    pass
                assert polled.value.status == 200
                expect(heading).to_have_text("The team database is unreachable")
            finally:
                server.start(server.port)  # the same port: the worker's URL is unchanged
            # Back: the next poll reloads the page, which the database now answers.
            expect(page.get_by_role("heading", level=1)).to_have_text("Memories", timeout=20_000)
            assert page.url == worker.url + "/memories"
        finally:
            worker.stop()
