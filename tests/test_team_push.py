"""`cairn team push` in-process: a local history (recorded through the API into SQLite) copied
into a real PostgreSQL team database; what is shared, idempotence, key mapping, bad input."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from worker.cli import main
from worker.settings import Settings
from worker.store import Store
from worker.store.pg import PgStore
from worker.team import ENV

REMOTE = "github.com/acme/app"


def checkout(tmp_path: Path) -> Path:
    """A git checkout whose origin is on GitHub (what the key mapping reads: .git/config)."""
    repo = tmp_path / "src" / "app"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:Acme/App.git\n'
    )
    return repo


def record(client: TestClient, root: str) -> None:
    client.post("/api/sessions", json={"session_id": "s-1", "project": root, "cwd": root})
    client.post(
        "/api/prompts", json={"session_id": "s-1", "text": "Make checkout fast", "event_id": "e-1"}
    )
    client.post(
        "/api/observations",
        json={"observations": [
            {"project": root, "session_id": "s-1", "type": "file_write", "title": "Edit cart",
             "files": [f"{root}/cart.py"]},
            {"project": root, "session_id": "s-1", "type": "command", "title": "$ pytest",
             "body": "exit code: 0"},
        ]},
    )  # fmt: skip
    for content in ("The API runs on Node 18", "The API runs on Node 20"):
        r = client.post("/api/memories", json={"kind": "fact", "project": root, "content": content})
        assert r.status_code in (200, 201), r.text
    client.post("/api/memories", json={"kind": "decision", "project": root,
                                       "content": "Cache prices in Redis"})  # fmt: skip
    client.post("/api/memories", json={"kind": "preference", "content": "Answer tersely"})
    r = client.post(
        "/api/sessions/s-1/summarize",
        json={"last_assistant_message": "The root cause was a missing index."},
    )
    assert r.status_code in (200, 201), r.text
    client.post("/api/sessions/s-1/checkpoint", json={"trigger": "manual"})


def team_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    store = PgStore(url)
    store.open()
    try:
        return store.read_sync(lambda db: [tuple(r) for r in db.execute(sql)])
    finally:
        store.close()


COUNTS = (
    "SELECT (SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM memories), "
    "(SELECT COUNT(*) FROM summaries), (SELECT COUNT(*) FROM checkpoints), "
    "(SELECT COUNT(*) FROM prompts), (SELECT COUNT(*) FROM observations)"
)


def local(settings: Settings, sql: str) -> Any:
    """The first value of a query on the local database (a write: it may change rows)."""
    store = Store(settings.db_path)
    store.open()
    try:
        return store.write_sync(lambda c: (c.execute(sql).fetchone() or [None])[0])
    finally:
        store.close()


def push(*flags: str) -> int:
    return main(["team", "push", "--quiet", *flags])


@pytest.mark.postgres
def test_push_shares_the_chosen_rows_once(
    client: TestClient, settings: Settings, pg_url: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    repo = checkout(tmp_path)
    record(client, str(repo))
    monkeypatch.setenv(ENV, pg_url)
    monkeypatch.setenv("CAIRN_AUTHOR", "ann@example.com")
    # the project's memories (not one person's global ones): the two facts, the decision, and
    # what the summary learned
    m = local(settings, "SELECT COUNT(*) FROM memories WHERE project_id IS NOT NULL")
    assert m >= 3
    local(settings, "UPDATE checkpoints SET author = NULL")  # recorded before authors were
    summary_author = local(settings, "SELECT author FROM summaries")

    assert push() == 0
    err = capsys.readouterr().err
    assert f"project {repo} -> {REMOTE}" in err and "not pushed: prompts and observations" in err
    # shared by default: the session, the project's memories (not the global preference), the
    # summary and the checkpoint; prompts and observations stay local
    assert team_rows(pg_url, COUNTS) == [(1, m, 1, 1, 0, 0)]
    assert team_rows(pg_url, "SELECT key, name FROM projects") == [(REMOTE, "app")]
    memories = team_rows(
        pg_url,
        "SELECT m.content, n.content, m.search_text <> '' FROM memories m "
        "LEFT JOIN memories n ON n.id = m.superseded_by ORDER BY m.id",
    )
    assert ("The API runs on Node 18", "The API runs on Node 20", True) in memories
    assert team_rows(pg_url, "SELECT author FROM summaries") == [(summary_author,)]  # kept
    assert team_rows(pg_url, "SELECT author FROM checkpoints") == [("ann@example.com",)]

    assert main(["team", "push"]) == 0  # idempotent: nothing new
    err = capsys.readouterr().err
    assert f"pushed to {PgStore(pg_url).where}: 0 rows copied" in err
    assert err.startswith("push [" + "#" * 30 + "] 100.0%")  # not a terminal: the last line
    assert team_rows(pg_url, COUNTS) == [(1, m, 1, 1, 0, 0)]

    assert push("--all") == 0  # prompts and observations, private to their author
    assert "2 copied" in capsys.readouterr().err
    assert team_rows(pg_url, COUNTS) == [(1, m, 1, 1, 1, 2)]
    assert team_rows(pg_url, "SELECT DISTINCT shared, author FROM observations") == [
        (0, summary_author)
    ]
    prompt = team_rows(pg_url, "SELECT id, shared FROM prompts")
    assert prompt[0][1] == 0
    # the hook event the prompt came with names the team's row: a replay is deduplicated
    assert team_rows(pg_url, "SELECT item_id FROM received_events WHERE event_id = 'e-1'") == [
        (str(prompt[0][0]),)
    ]
    # the file_writes trigger saw the pushed file write
    assert team_rows(pg_url, "SELECT COUNT(*) FROM file_writes") == [(1,)]

    assert push("--all", "--share") == 0  # shared explicitly: the same rows, now shared
    assert "now shared" in capsys.readouterr().err
    assert team_rows(pg_url, "SELECT DISTINCT shared FROM observations") == [(1,)]
    assert team_rows(pg_url, COUNTS) == [(1, m, 1, 1, 1, 2)]


@pytest.mark.postgres
def test_push_only_the_projects_named(
    client: TestClient, settings: Settings, pg_url: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    repo = checkout(tmp_path)
    record(client, str(repo))
    client.post("/api/sessions", json={"session_id": "mine", "project": "/home/ann/diary"})
    client.post("/api/memories", json={"kind": "fact", "project": "/home/ann/diary",
                                       "content": "A private note"})  # fmt: skip
    monkeypatch.setenv(ENV, pg_url)
    assert push("--project", str(tmp_path / "elsewhere")) == 1  # never recorded here
    assert f"no local project {str(tmp_path / 'elsewhere')!r} (recorded here: {repo}, " in (
        _one_line_error(capsys)
    )
    assert push("--project", str(repo), "--all") == 0
    assert team_rows(pg_url, "SELECT key FROM projects") == [(REMOTE,)]
    assert team_rows(pg_url, "SELECT id FROM sessions") == [("s-1",)]
    assert team_rows(pg_url, "SELECT COUNT(*) FROM memories WHERE content = 'A private note'") == [
        (0,)
    ]


@pytest.mark.postgres
def test_a_push_cut_short_is_finished_by_running_it_again(
    client: TestClient, settings: Settings, pg_url: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    record(client, str(checkout(tmp_path)))
    monkeypatch.setenv(ENV, pg_url)
    assert push("--all") == 0
    whole = team_rows(pg_url, COUNTS)
    store = PgStore(pg_url)  # as if the push had stopped after its first batches
    store.open()
    store.write_sync(lambda db: db.execute("DELETE FROM observations"))
    store.write_sync(lambda db: db.execute("DELETE FROM checkpoints"))
    store.close()
    assert push("--all") == 0
    assert team_rows(pg_url, COUNTS) == whole


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cairn: team push failed: ")
    return err


def _password_role(admin_url: str) -> str:
    """A role that must give its password (scram) on the run's server, which trusts the rest:
    a line for it alone goes first in pg_hba.conf. Its URL with a wrong password."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cairn_pusher') "
            "THEN CREATE ROLE cairn_pusher LOGIN PASSWORD 'the-right-pw'; END IF; END $$"
        )
        hba = Path(str(conn.execute("SHOW hba_file").fetchone()[0]))
        rule = "host all cairn_pusher 127.0.0.1/32 scram-sha-256\n"
        if rule not in hba.read_text():
            hba.write_text(rule + hba.read_text())
        conn.execute("SELECT pg_reload_conf()")
    wrong = admin_url.replace("postgres@", "cairn_pusher:wr0ng-pw@", 1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the reload reaches new connections shortly
        try:
            psycopg.connect(wrong, connect_timeout=2).close()
        except psycopg.OperationalError:
            return wrong
        time.sleep(0.05)
    pytest.fail("the server did not ask cairn_pusher for a password")


@pytest.mark.parametrize(
    ("fault", "said", "secret"),
    [
        ("unreachable", "unreachable", "s3cret-pw"),
        pytest.param("no database", 'database "no_such_team" does not exist', "",
                     marks=pytest.mark.postgres),
        pytest.param("wrong password", "password authentication failed", "wr0ng-pw",
                     marks=pytest.mark.postgres),
    ],
)  # fmt: skip
def test_a_database_it_cannot_use_is_one_line_without_the_password(
    client: TestClient, settings: Settings, request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    fault: str, said: str, secret: str,
) -> None:  # fmt: skip
    client.post("/api/sessions", json={"session_id": "s-1", "project": "/p"})
    if fault == "unreachable":  # nothing listens on port 1
        url = "postgresql://alice:s3cret-pw@127.0.0.1:1/team?connect_timeout=2"
    elif fault == "no database":
        url = request.getfixturevalue("pg_url").rsplit("/", 1)[0] + "/no_such_team"
    else:
        url = _password_role(request.getfixturevalue("pg_url"))
    monkeypatch.setenv(ENV, url)
    assert push() == 1
    err = _one_line_error(capsys)
    assert said in err
    if secret:
        assert secret not in err and ":***@" in err


def test_no_team_database_or_no_local_history(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert push() == 1
    assert "no team database is configured" in _one_line_error(capsys)
    monkeypatch.setenv(ENV, "postgresql://127.0.0.1:1/team")
    assert push() == 1
    assert "no local database" in _one_line_error(capsys)


@pytest.mark.postgres
def test_a_newer_team_schema_is_refused_and_nothing_copied(
    client: TestClient, settings: Settings, pg_url: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    client.post("/api/sessions", json={"session_id": "s-1", "project": "/p"})
    store = PgStore(pg_url)
    store.open()
    store.write_sync(
        lambda db: db.execute(
            "INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 1)"
        )
    )
    store.close()
    monkeypatch.setenv(ENV, pg_url)
    assert push() == 1
    assert "newer Cairn" in _one_line_error(capsys)
    assert team_rows_raw(pg_url, "SELECT COUNT(*) FROM sessions") == [(0,)]


def team_rows_raw(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows read without opening a PgStore (which refuses the newer schema)."""
    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql)]
