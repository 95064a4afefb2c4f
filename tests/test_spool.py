"""The worker side of the hooks' spool: replay through the app, exactly once, corrupt lines skipped."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from worker.settings import Settings
from worker.spool import SpoolReplayer, backlog, claim, parse_line

pytestmark = pytest.mark.both_backends


@pytest.fixture
def client(client: TestClient) -> TestClient:
    """The app after its replay round at start: a file written later is then replayed by the
    round a test asks for, not raced for by the start round (seen on a loaded machine)."""
    deadline = time.monotonic() + 10
    while client.get("/api/spool").json()["runs"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    return client


def line(method: str, path: str, body: Any) -> str:
    return json.dumps({"v": 1, "method": method, "path": path, "body": body, "hook": "test"})


def obs(i: int, session: str = "s1") -> str:
    return line(
        "POST",
        "/api/observations",
        {
            "project": "/repo",
            "session_id": session,
            "type": "command",
            "title": f"cmd {i}",
            "event_id": f"cc:{session}:toolu_{i}",
        },
    )


def write_spool(settings: Settings, name: str, lines: list[str], torn: str = "") -> Path:
    folder = settings.spool_dir
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(x + "\n" for x in lines) + torn)
    return path


def replay(client: TestClient) -> dict[str, Any]:
    response = client.post("/api/spool/replay")
    assert response.status_code == 200, response.text
    return dict(response.json())


def titles(client: TestClient) -> list[str]:
    items = client.get("/api/observations?limit=500").json()["items"]
    return sorted(item["title"] for item in items)


def test_replay_is_exactly_once_and_skips_corrupt_lines(
    client: TestClient, settings: Settings
) -> None:
    session = line(
        "POST", "/api/sessions", {"session_id": "s1", "project": "/repo", "event_id": "e-start"}
    )
    prompt = line(
        "POST", "/api/prompts", {"session_id": "s1", "text": "fix the bug", "event_id": "e-p1"}
    )
    lines = [session, prompt, obs(1), "{not json", obs(2), "\x00\xff garbage", obs(3)]
    write_spool(settings, "events.jsonl", lines, torn='{"v":1,"method":"POST","path":"/api/obs')
    result = replay(client)
    assert result["corrupt"] == 3
    assert result["replayed"] == 5 and result["duplicates"] == 0 and result["rejected"] == 0
    assert titles(client) == ["cmd 1", "cmd 2", "cmd 3"]
    assert result["backlog"]["events"] == 0 and not list(settings.spool_dir.glob("*.jsonl"))
    # The same events spooled again (a hook timed out after the worker had stored them).
    write_spool(settings, "events.jsonl", [prompt, obs(1), obs(2), obs(3)])
    again = replay(client)
    assert again["replayed"] == 0 and again["duplicates"] == 4
    assert titles(client) == ["cmd 1", "cmd 2", "cmd 3"]
    detail = client.get("/api/sessions/s1").json()
    assert [p["text"] for p in detail["prompts"]] == ["fix the bug"]
    status = client.get("/api/spool").json()
    assert status["running"] is True and status["corrupt"] >= 3


def test_rejected_and_unknown_routes_do_not_block_the_rest(
    client: TestClient, settings: Settings
) -> None:
    bad = line("POST", "/api/observations", {"project": "/repo", "type": "nonsense", "title": "x"})
    unknown_session = line("POST", "/api/sessions/nope/summarize", {})
    foreign = line("POST", "/api/not-a-route", {"a": 1})
    write_spool(settings, "a.jsonl", [bad, unknown_session, foreign, obs(7)])
    result = replay(client)
    assert result["rejected"] == 2 and result["replayed"] == 1 and result["corrupt"] == 1
    assert titles(client) == ["cmd 7"]


def test_worker_failure_keeps_the_rest_for_the_next_round(
    client: TestClient, settings: Settings
) -> None:
    write_spool(
        settings,
        "events.jsonl",
        [
            line(
                "POST",
                "/api/prompts",
                {"session_id": "s2", "project": "/repo", "text": f"p{i}", "event_id": f"p{i}"},
            )
            for i in range(5)
        ],
    )
    replayer = client.app_state["cairn"].services["spool"]
    assert isinstance(replayer, SpoolReplayer)
    real = replayer.dispatch
    calls = {"n": 0}

    async def flaky(method: str, path: str, body: Any) -> tuple[int, Any]:
        calls["n"] += 1
        if calls["n"] == 3:
            return 503, {"error": {"message": "busy"}}
        return await real(method, path, body)

    replayer.dispatch = flaky  # type: ignore[method-assign]
    first = replay(client)
    assert first["replayed"] == 2 and first["kept"] == 3 and first["errors"]
    assert backlog(settings)["events"] == 3
    replayer.dispatch = real  # type: ignore[method-assign]
    second = replay(client)
    assert second["replayed"] == 3 and backlog(settings)["events"] == 0
    texts = [p["text"] for p in client.get("/api/sessions/s2").json()["prompts"]]
    assert texts == ["p0", "p1", "p2", "p3", "p4"]


@pytest.mark.sqlite_only("no database: the spool's files and their renames")
def test_claim_renames_files_and_finishes_leftovers_first(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    folder.mkdir()
    (folder / "events.jsonl").write_text(obs(1) + "\n")
    (folder / "empty.jsonl").write_text("")
    claimed = claim(folder)
    assert len(claimed) == 1 and claimed[0].name.endswith(".replaying")
    assert not (folder / "events.jsonl").exists() and not (folder / "empty.jsonl").exists()
    (folder / "events.jsonl").write_text(obs(2) + "\n")
    assert claim(folder) == claimed  # the unfinished file comes first; new lines wait


@pytest.mark.sqlite_only("no database: parse_line over a string")
def test_parse_line_rejects_foreign_records() -> None:
    assert parse_line(obs(1).encode(), 1) is not None
    for raw in (
        b"[]",
        b'{"method":"GET","path":"/api/x"}',
        b'{"method":"POST","path":"/etc/passwd"}',
        b'{"method":"POST","path":"/api/../x"}',
        b'{"method":"DELETE","path":"/api/memories/1"}',
        b'{"method":"POST","path":"/api/memories","body":{}}',
        b'{"method":"POST","path":"/api/sessions/a/b/end"}',
        b'{"method":"POST","path":"/api/x","body":[1]}',
        b"\xff\xfe",
        b"null",
    ):
        assert parse_line(raw, 1) is None


@pytest.mark.sqlite_only("no database: the spool's files and their locks")
def test_claim_skips_a_file_whose_writer_holds_the_lock(tmp_path: Path) -> None:
    import fcntl
    import os

    folder = tmp_path / "spool"
    folder.mkdir()
    path = folder / "events.jsonl"
    path.write_text(obs(1) + "\n")
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a hook stopped in the middle of an append
        assert claim(folder) == []
    finally:
        os.close(fd)
    assert len(claim(folder)) == 1


def test_replay_counters_survive_a_restart(settings: Settings) -> None:
    """A worker killed after replaying must not make the next one report nothing replayed."""
    from worker.app import create_app

    def client_for() -> TestClient:
        client = TestClient(create_app(settings), base_url="http://127.0.0.1")
        return client

    # The round at start and the one asked for here may each take the file: check the totals.
    write_spool(settings, "events.jsonl", [obs(1), obs(2), "{not json"])
    with client_for() as first:
        first.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
        replay(first)
        before = first.get("/api/spool").json()
        assert before["replayed"] == 2
    with client_for() as second:
        second.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
        after = second.get("/api/spool").json()
        assert after["replayed"] == before["replayed"] == 2
        assert after["corrupt"] == before["corrupt"] == 1
        assert after["runs"] >= 1  # rounds that found nothing are not saved
        write_spool(settings, "more.jsonl", [obs(3)])
        replay(second)
        assert second.get("/api/spool").json()["replayed"] == 3
