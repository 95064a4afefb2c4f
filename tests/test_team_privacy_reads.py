"""Every read that lists prompts or observations, on two workers' apps over one real PostgreSQL
database: each author writes one shared and one private prompt and observation, and each page,
endpoint and tool shows Ann her own rows and the shared ones, never Bob's private ones (and Bob
the same, mirrored). store/privacy.py is the rule; Cairn.reader names the reader."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.backends import execute, opened_store
from tests.conftest import running_app
from worker.cli import main
from worker.mcp_server import CairnTools
from worker.settings import Settings

PROJECT = "github.com/acme/app"
ANN, BOB = "ann@acme.dev", "bob@acme.dev"
# One word per row, found wherever any part of the row is shown (prompt text, observation
# title and written file).
ROWS = {
    ANN: ("annprivprompt", "annsharedprompt", "annprivobs", "annsharedobs"),
    BOB: ("bobsharedprompt", "bobsharedobs", "bobprivobs", "bobprivprompt"),
}
PRIVATE = {ANN: ("annprivprompt", "annprivobs"), BOB: ("bobprivprompt", "bobprivobs")}
EVERY = [word for words in ROWS.values() for word in words]

pytestmark = pytest.mark.postgres


@dataclasses.dataclass
class Team:
    ann: TestClient
    bob: TestClient
    ids: dict[str, int]  # word -> prompt or observation id

    def client(self, author: str) -> TestClient:
        return self.ann if author == ANN else self.bob


def _write(client: TestClient, sid: str, word: str) -> int:
    """The row `word` names: a prompt, or a file_write observation of src/<word>.py."""
    if word.endswith("prompt"):
        r = client.post(
            "/api/prompts", json={"session_id": sid, "text": f"{word}: refactor the billing code"}
        )
    else:
        r = client.post(
            "/api/observations",
            json={
                "session_id": sid,
                "project": PROJECT,
                "type": "file_write",
                "title": f"{word} edited the billing code",
                "body": f"{word} changed",
                "files": [f"src/{word}.py"],
            },
        )
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


@pytest.fixture
def team(
    settings: Settings, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Team]:
    monkeypatch.setenv("CAIRN_DATABASE_URL", pg_url)
    with ExitStack() as stack:
        ann, bob = (
            stack.enter_context(
                running_app(
                    dataclasses.replace(settings, home=tmp_path / name, author=author),
                    authenticated=True,
                )
            )
            for name, author in (("ann", ANN), ("bob", BOB))
        )
        ids: dict[str, int] = {}
        for author, client in ((ANN, ann), (BOB, bob)):
            sid = f"s-{author[:3]}"
            r = client.post("/api/sessions", json={"session_id": sid, "project": PROJECT})
            assert r.status_code == 201, r.text
            for word in ROWS[author]:  # Bob's private prompt last: the project's latest
                ids[word] = _write(client, sid, word)
        with opened_store(settings) as store:
            for author, words in ROWS.items():
                for word in words:
                    table = "prompts" if word.endswith("prompt") else "observations"
                    shared = 0 if word in PRIVATE[author] else 1
                    execute(
                        store, f"UPDATE {table} SET shared = ? WHERE id = ?", (shared, ids[word])
                    )
        yield Team(ann, bob, ids)


def _shows(text: str) -> set[str]:
    return {word for word in EVERY if word in text}


def _mirror(author: str) -> str:
    return BOB if author == ANN else ANN


def _seen_by(author: str) -> set[str]:
    """Everything but the other author's private rows."""
    return set(EVERY) - set(PRIVATE[_mirror(author)])


READERS = pytest.mark.parametrize("author", [ANN, BOB])


@READERS
def test_the_feed_pages_show_own_and_shared_rows_only(team: Team, author: str) -> None:
    client = team.client(author)
    assert _shows(client.get("/").text) == _seen_by(author)
    older = client.get("/feed/items", params={"cursor": "99999999999999.summary.1"})
    assert _shows(older.text) == _seen_by(author)
    for type_, suffix in (("prompt", "prompt"), ("file_write", "obs")):
        shown = _shows(client.get("/", params={"type": type_}).text)
        assert shown == {w for w in _seen_by(author) if w.endswith(suffix)}


@READERS
def test_a_live_feed_entry_of_a_private_row_is_empty_for_a_teammate(
    team: Team, author: str
) -> None:
    client = team.client(author)
    for word in PRIVATE[_mirror(author)]:
        kind = "prompt" if word.endswith("prompt") else "observation"
        entry = client.get(f"/feed/item/{kind}/{team.ids[word]}")
        assert entry.status_code == 200 and entry.text == ""
    for word in PRIVATE[author]:
        kind = "prompt" if word.endswith("prompt") else "observation"
        assert word in client.get(f"/feed/item/{kind}/{team.ids[word]}").text


@READERS
def test_the_timeline_page_and_api_show_own_and_shared_rows_only(team: Team, author: str) -> None:
    client = team.client(author)
    assert _shows(client.get("/timeline", params={"project": PROJECT}).text) == _seen_by(author)
    around = client.get("/timeline", params={"project": PROJECT, "at": "99999999999999"})
    assert _shows(around.text) == _seen_by(author)
    api = client.get("/api/timeline", params={"project": PROJECT, "before": 50})
    assert api.status_code == 200 and _shows(api.text) == _seen_by(author)
    anchor = team.ids["annsharedobs"]
    centred = client.get(
        "/api/timeline", params={"anchor_id": anchor, "before": 50, "after": 50}
    ).json()
    assert _shows(str(centred)) == _seen_by(author)
    hidden = PRIVATE[_mirror(author)][1]  # the teammate's private observation, as an anchor
    missing = client.get("/api/timeline", params={"anchor_id": team.ids[hidden]})
    assert missing.status_code == 404


@READERS
def test_the_mcp_timeline_tool_shows_own_and_shared_rows_only(team: Team, author: str) -> None:
    client = team.client(author)

    class Gateway:
        """The MCP tools' calls answered by the worker's app in-process."""

        async def acall(
            self,
            method: str,
            path: str,
            body: Any = None,
            query: Mapping[str, Any] | None = None,
        ) -> Any:
            r = client.request(method, path, params=dict(query or {}), json=body)
            assert r.status_code == 200, r.text
            return r.json()

    tools = CairnTools(Gateway(), PROJECT)  # type: ignore[arg-type]
    text = asyncio.run(tools.timeline(before=25, after=25))
    assert _shows(text) == _seen_by(author)


@READERS
def test_session_pages_and_api_show_own_and_shared_rows_with_their_counts(
    team: Team, author: str
) -> None:
    client = team.client(author)
    for sid in ("s-ann", "s-bob"):
        page = client.get(f"/sessions/{sid}")
        api = client.get(f"/api/sessions/{sid}").json()
        expected = {w for w in _seen_by(author) if w.startswith(sid[2:])}
        assert _shows(page.text) == expected and _shows(str(api)) == expected
        assert api["prompt_count"] == len(api["prompts"])
        assert api["observation_count"] == len(api["observations"])
    listed = {s["id"]: s for s in client.get("/api/sessions").json()["items"]}
    mine, theirs = f"s-{author[:3]}", f"s-{_mirror(author)[:3]}"
    assert (listed[mine]["prompt_count"], listed[mine]["observation_count"]) == (2, 2)
    assert (listed[theirs]["prompt_count"], listed[theirs]["observation_count"]) == (1, 1)
    observations = client.get("/api/observations", params={"limit": 50}).text
    assert _shows(observations) == {w for w in _seen_by(author) if w.endswith("obs")}


@READERS
def test_the_profile_shows_own_and_shared_rows_only(team: Team, author: str) -> None:
    profile = team.client(author).get("/api/profile", params={"project": PROJECT})
    assert profile.status_code == 200, profile.text
    task = profile.json()["dynamic"]["current_task"]
    # Bob's private prompt is the project's latest: Bob's current task, hidden from Ann.
    assert ("bobprivprompt" in task) == (author == BOB)
    assert not _shows(str(profile.json())) & set(PRIVATE[_mirror(author)])


@READERS
def test_the_report_counts_and_lists_own_and_shared_rows_only(team: Team, author: str) -> None:
    report = team.client(author).get(
        "/api/report", params={"project": PROJECT, "since": "2000-01-01"}
    )
    assert report.status_code == 200, report.text
    assert _shows(report.text) == {w for w in _seen_by(author) if w.endswith("obs")}
    assert (report.json()["prompts"], report.json()["observations"]) == (3, 3)


@READERS
def test_the_context_and_search_give_own_and_shared_rows_only(team: Team, author: str) -> None:
    client = team.client(author)
    start = client.get("/api/context", params={"project": PROJECT, "session_id": "s-new"})
    assert start.status_code == 200, start.text
    assert not _shows(start.text) & set(PRIVATE[_mirror(author)])
    asked = client.get("/api/context", params={"project": PROJECT, "query": "billing code"})
    assert asked.status_code == 200, asked.text
    assert not _shows(asked.text) & set(PRIVATE[_mirror(author)])
    found = client.get("/api/search", params={"q": "billing", "limit": 50})
    assert found.status_code == 200 and _shows(found.text) <= _seen_by(author)


@READERS
def test_a_teammates_private_observation_cannot_be_archived_or_forgotten(
    team: Team, author: str
) -> None:
    client = team.client(author)
    hidden = team.ids[PRIVATE[_mirror(author)][1]]
    assert client.post(f"/api/observations/{hidden}/archive", json={}).status_code == 404
    assert client.post(f"/api/observations/{hidden}/restore", json={}).status_code == 404
    assert client.delete(f"/api/observations/{hidden}").status_code == 404
    page = client.post(f"/feed/observation/{hidden}/archive")
    assert page.status_code == 404 and not _shows(page.text)
    client.post(f"/feed/observation/{hidden}/forget")
    owner = team.client(_mirror(author)).get(f"/api/observations/{hidden}")
    assert owner.status_code == 200 and owner.json()["archived_at"] is None


@READERS
def test_an_export_holds_own_and_shared_rows_only(
    team: Team, author: str, settings: Settings
) -> None:
    with opened_store(settings) as store:  # a record of each prompt given as context
        for word in ("annprivprompt", "annsharedprompt", "bobprivprompt", "bobsharedprompt"):
            execute(
                store,
                "INSERT INTO context_injections(session_id, item_kind, item_id, injected_at) "
                "VALUES ('s-x', 'prompt', ?, 1)",
                (team.ids[word],),
            )
    export = team.client(author).get("/api/export")
    assert export.status_code == 200, export.text
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert _shows(export.text) == _seen_by(author)
    assert lines[0]["private_rows_of"] == author
    injected = {r["row"]["item_id"] for r in lines[1:] if r["table"] == "context_injections"}
    hidden = team.ids[PRIVATE[_mirror(author)][0]]
    assert hidden not in injected and len(injected) == 3
    assert lines[0]["tables"]["prompts"] == lines[0]["tables"]["observations"] == 3


@READERS
def test_cairn_export_and_report_read_the_team_database_as_their_user(
    team: Team, author: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CAIRN_AUTHOR", author)  # the CLI opens the team database itself
    assert main(["export", "--quiet"]) == 0
    assert _shows(capsys.readouterr().out) == _seen_by(author)
    assert main(["report", "--project", PROJECT, "--since", "2000-01-01", "--json"]) == 0
    report = capsys.readouterr().out
    assert _shows(report) == {w for w in _seen_by(author) if w.endswith("obs")}
    assert json.loads(report)["prompts"] == 3


@READERS
def test_a_summary_or_checkpoint_of_a_teammates_session_reads_only_shared_rows(
    team: Team, author: str
) -> None:
    client, theirs = team.client(author), f"s-{_mirror(author)[:3]}"
    summary = client.post(f"/api/sessions/{theirs}/summarize", json={})
    assert summary.status_code in (200, 201), summary.text
    checkpoint = client.post(f"/api/sessions/{theirs}/checkpoint", json={})
    assert checkpoint.status_code in (200, 201), checkpoint.text
    for written in (summary.text, checkpoint.text):
        assert not _shows(written) & set(PRIVATE[_mirror(author)])


def test_the_static_profile_holds_only_what_its_reader_may_see(
    team: Team, settings: Settings
) -> None:
    """The static part (commands that worked, cached per reader) reads what its reader may see:
    Bob's private command is in his profile, never in Ann's; his shared one in both."""
    ids = {}
    for word in ("bobsecretcmd", "bobsharedcmd"):
        r = team.bob.post(
            "/api/observations",
            json={
                "session_id": "s-bob",
                "project": PROJECT,
                "type": "command",
                "title": f"$ pytest tests/{word}",
                "body": "",
                "meta": {"command": f"pytest tests/{word}", "exit_code": 0},
            },
        )
        assert r.status_code == 201, r.text
        ids[word] = int(r.json()["id"])
    with opened_store(settings) as store:  # shared as CAIRN_TEAM_SHARE_OBSERVATIONS would
        execute(store, "UPDATE observations SET shared = 1 WHERE id = ?", (ids["bobsharedcmd"],))
    for refresh in ("true", "false"):  # computed, then from each reader's cache
        for client in (team.bob, team.ann):
            profile = client.get("/api/profile", params={"project": PROJECT, "refresh": refresh})
            assert profile.status_code == 200, profile.text
            commands = [c["command"] for c in profile.json()["static"]["commands"]]
            assert "pytest tests/bobsharedcmd" in commands
            assert ("pytest tests/bobsecretcmd" in commands) == (client is team.bob), commands
