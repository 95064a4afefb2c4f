"""Every stored row records its author: migration 14, the API (given or the worker's own), the
git/OS resolution (worker and hooks twins), and the dashboard showing it."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.backends import rows
from tests.conftest import BASE_URL
from tests.hook_modules import identity as hooks
from worker import project_identity as ours
from worker.app import create_app
from worker.settings import Settings, load_settings
from worker.store import sql_terms
from worker.store.backend import Backend
from worker.store.m014_author import AUTHORED
from worker.store.migrations import MIGRATIONS, apply_migrations

pytestmark = pytest.mark.both_backends

WORKER_AUTHOR = "worker-owner@example.org"
SID = "s-author"


@pytest.fixture
def api(isolated_home: Path, backend: str) -> Iterator[TestClient]:
    """An authenticated client of a worker whose own author is set (CAIRN_AUTHOR), over the
    test's backend."""
    settings = load_settings(author=WORKER_AUTHOR)
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        client.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
        yield client


@pytest.mark.migrations
@pytest.mark.sqlite_only("migration 14 of the SQLite schema, run on an old SQLite file")
def test_migration_14_adds_an_empty_author_to_every_kind_of_row(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    sql_terms.register(conn)
    for version, name, statements in MIGRATIONS:
        if version >= 14:
            break
        for statement in statements:
            conn.execute(statement)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (version, name))
    conn.execute("INSERT INTO projects(key, name, created_at) VALUES ('/p/app', 'app', 1)")
    conn.execute("INSERT INTO sessions(id, project_id, started_at) VALUES ('old', 1, 1)")
    assert apply_migrations(conn) == [v for v, _, _ in MIGRATIONS if v >= 14]  # 14 and later
    for table in AUTHORED:
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        assert "author" in columns, table
    assert conn.execute("SELECT author FROM sessions WHERE id = 'old'").fetchone() == (None,)


def test_rows_record_the_author_sent_or_the_workers_own(
    api: TestClient, backend: str, store: Backend
) -> None:
    started = api.post(
        "/api/sessions", json={"session_id": SID, "project": "/p/app", "author": "ann@acme.dev"}
    )
    assert started.status_code == 201 and started.json()["author"] == "ann@acme.dev"
    prompt = api.post("/api/prompts", json={"session_id": SID, "text": "fix the flaky test"})
    assert prompt.json()["author"] == "ann@acme.dev"  # none sent: the session's
    sent = api.post(
        "/api/observations",
        json={
            "project": "/p/app",
            "session_id": SID,
            "type": "command",
            "title": "$ pytest -x",
            "author": "dee@acme.dev",
        },
    )
    assert sent.json()["author"] == "dee@acme.dev"  # a row's own author wins
    quiet = api.post(
        "/api/observations",
        json={"project": "/p/app", "session_id": SID, "type": "command", "title": "$ make"},
    )
    assert quiet.json()["author"] == "ann@acme.dev"  # none sent: the session's
    own = api.post(
        "/api/prompts",
        json={"session_id": "other", "project": "/p/app", "text": "hello"},
    )
    assert own.json()["author"] == WORKER_AUTHOR  # a new session naming nobody: the worker's
    batch = api.post(
        "/api/observations",
        json={"observations": [{"project": "/p/app", "type": "note", "title": "a note"}]},
    )
    assert batch.json()["items"][0]["author"] == WORKER_AUTHOR  # no session: the worker's
    memory = api.post(
        "/api/memories",
        json={"project": "/p/app", "content": "We decided to pin numpy below 3", "author": "bo@x"},
    )
    assert memory.status_code == 201 and memory.json()["author"] == "bo@x"
    # Summaries and checkpoints are by the author of their session.
    summary = api.post(f"/api/sessions/{SID}/summarize", json={"last_assistant_message": "Done."})
    assert summary.json()["author"] == "ann@acme.dev"
    checkpoint = api.post(f"/api/sessions/{SID}/checkpoint", json={"trigger": "auto"})
    assert checkpoint.json()["author"] == "ann@acme.dev"
    # Read back, not only answered.
    assert api.get(f"/api/sessions/{SID}").json()["author"] == "ann@acme.dev"
    stored = rows(store, "SELECT author FROM observations")
    assert sorted(author for (author,) in stored) == sorted(
        ["dee@acme.dev", "ann@acme.dev", WORKER_AUTHOR]
    )
    listed = api.get("/api/observations", params={"project": "/p/app"}).json()["items"]
    # On a team database a row unshared is private to its author (store/privacy.py): the
    # worker's owner lists only their own.
    visible = (
        ["dee@acme.dev", "ann@acme.dev", WORKER_AUTHOR] if backend == "sqlite" else [WORKER_AUTHOR]
    )
    assert sorted(o["author"] for o in listed) == sorted(visible)
    assert api.get(f"/api/memories/{memory.json()['id']}").json()["author"] == "bo@x"


def test_a_session_an_observation_created_takes_that_observations_author(
    api: TestClient,
) -> None:
    api.post(
        "/api/observations",
        json={
            "project": "/p/app",
            "session_id": "implicit",
            "type": "note",
            "title": "first",
            "author": "cy@acme.dev",
        },
    )
    assert api.get("/api/sessions/implicit").json()["author"] == "cy@acme.dev"


@pytest.mark.parametrize(
    ("author", "words"),
    [
        ("", "must not be empty"),
        ("a" * 321, "the limit is 320"),
        ("ann\n@x", "control characters"),
        (5, "string"),
    ],
)
def test_a_bad_author_is_refused_naming_the_field(
    api: TestClient, author: object, words: str
) -> None:
    r = api.post(
        "/api/observations",
        json={"project": "/p/app", "type": "note", "title": "t", "author": author},
    )
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["field"] == "author" and words in error["message"]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("module", [ours, hooks], ids=["worker", "hooks"])
@pytest.mark.sqlite_only("no database: the author is resolved from git config and the OS user")
def test_the_author_is_git_user_email_as_git_ranks_it_else_the_os_user(
    module: object, tmp_path: Path, user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    author = module.author  # type: ignore[attr-defined]
    repo = tmp_path / "repo"
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("USER", "os-user")
    monkeypatch.setenv("LOGNAME", "os-user")
    assert author(None) == "os-user"
    _write(user_home / ".config" / "git" / "config", "[user]\n\temail = xdg@example.org\n")
    assert author(None) == "xdg@example.org"
    _write(user_home / ".gitconfig", '[user]\n\tname = Ann\n\temail = "ann@home.dev"\n')
    assert author(None) == "ann@home.dev"
    assert author(str(repo)) == "ann@home.dev"  # a folder that is no repository
    _write(repo / ".git" / "config", "[user]\n  email = ann@work.example # work repos\n")
    assert author(str(repo)) == "ann@work.example"  # the repository's own wins
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(_write(tmp_path / "g", "[user]\nemail=g@x\n")))
    assert author(None) == "g@x"


def test_the_dashboard_shows_who_wrote_each_row(isolated_home: Path, backend: str) -> None:
    settings: Settings = load_settings(author=WORKER_AUTHOR)
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        token = settings.token_path.read_text().strip()
        assert client.post("/login", data={"token": token}, follow_redirects=False).is_redirect
        h = {"Authorization": f"Bearer {token}"}
        client.post(
            "/api/sessions",
            json={"session_id": SID, "project": "/p/app", "author": "ann@acme.dev"},
            headers=h,
        )
        client.post(
            "/api/observations",
            json={"project": "/p/app", "session_id": SID, "type": "command", "title": "$ make"},
            headers=h,
        )
        memory = client.post(
            "/api/memories",
            json={"project": "/p/app", "content": "Lesson: retry the flaky upload test once"},
            headers=h,
        ).json()
        feed = client.get("/", headers={"accept": "text/html"}).text
        assert re.search(r'class="author"[^>]*>worker-owner@example\.org<', feed)
        session = client.get(f"/sessions/{SID}", headers={"accept": "text/html"}).text
        assert "<dt>Author</dt><dd>ann@acme.dev</dd>" in session
        page = client.get(f"/memories/{memory['id']}", headers={"accept": "text/html"}).text
        assert f"<dt>Author</dt><dd>{WORKER_AUTHOR}</dd>" in page


def test_one_rule_names_the_author_on_every_path(
    isolated_home: Path,
    backend: str,
    tmp_path: Path,
    user_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REST and dashboard saves were by the OS user, hooks by the checkout's git email, facts
    taken from summaries by nobody: now each is by the checkout's author (CAIRN_AUTHOR, else
    git's user.email for it, else the OS user), and a session's rows by the session's."""
    monkeypatch.delenv("CAIRN_AUTHOR", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("USER", "os-user")
    monkeypatch.setenv("LOGNAME", "os-user")
    repo = tmp_path / "shop"
    _write(repo / ".git" / "config", "[user]\n\temail = ann@work.example\n")
    settings = load_settings()
    assert settings.author == ""
    with TestClient(create_app(settings), base_url=BASE_URL) as api:
        api.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
        memory = api.post("/api/memories", json={"project": str(repo), "content": "Use uv"})
        assert memory.json()["author"] == "ann@work.example"  # was the OS user
        loose = api.post(
            "/api/observations",
            json={"project": str(repo), "session_id": "no-start", "type": "note", "title": "x"},
        )
        assert loose.json()["author"] == "ann@work.example"  # a session with no SessionStart
        assert api.get("/api/sessions/no-start").json()["author"] == "ann@work.example"
        elsewhere = api.post("/api/memories", json={"scope": "global", "content": "Be kind"})
        assert elsewhere.json()["author"] == "os-user"  # no checkout: the worker's own
        api.post("/api/sessions", json={"session_id": "s2", "project": str(repo), "author": "bo@x"})
        summary = api.post(
            "/api/sessions/s2/summarize",
            json={"last_assistant_message": "Learned: the CI runners have no IPv6 at all."},
        )
        assert summary.status_code in (200, 201), summary.text
        facts = api.get("/api/memories", params={"project": str(repo), "kind": "fact"}).json()
        (fact,) = [m for m in facts["items"] if "IPv6" in m["content"]]
        assert fact["author"] == "bo@x"  # a fact the summary took: by the session's author
    monkeypatch.setenv("CAIRN_AUTHOR", "team-bot@acme.dev")  # set: it wins everywhere
    assert hooks.author(str(repo)) == "team-bot@acme.dev"
    chosen = load_settings()
    with TestClient(create_app(chosen), base_url=BASE_URL) as api:
        api.headers["Authorization"] = f"Bearer {chosen.token_path.read_text().strip()}"
        memory = api.post("/api/memories", json={"project": str(repo), "content": "Pin ruff"})
        assert memory.json()["author"] == "team-bot@acme.dev"
