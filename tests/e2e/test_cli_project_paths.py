"""`--project PATH` on the CLI names a checkout as the hooks key it: on a team database the
checkout's git remote (github.com/acme/app), on SQLite its repository root, so a user passes
the path of their checkout, or `.`, on either backend; a key passed as a key still works.
Real hook processes record a session from a subfolder; `cairn` runs as a real process."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.hook_runner import base, hook_env, run_hook, tool_payload
from tests.e2e.team_checkout import PROJECT, checkout
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

AUTHOR = "ann@acme.dev"


@pytest.fixture
def worker(isolated_home: Path, database_env: dict[str, str]) -> Iterator[WorkerProcess]:
    """Ann's worker (on `postgres` over the test's team database): her tool observations are
    private to her on a team database, and she is the one searching them."""
    env = {"CAIRN_AUTHOR": AUTHOR, **database_env}
    proc = WorkerProcess(home=isolated_home, env_extra=env).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def recorded(worker: WorkerProcess, tmp_path: Path) -> Path:
    """A checkout whose session the hooks recorded (from a subfolder, as Claude Code runs)."""
    repo = checkout(tmp_path / "laptop" / "app", AUTHOR)
    env = hook_env(worker.home, CAIRN_PORT=str(worker.port), **worker.env_extra)
    cwd = repo / "src"
    start = {**base("s-paths", cwd, "SessionStart"), "source": "startup"}
    assert run_hook("SessionStart", start, env, cwd=cwd).returncode == 0
    # Three commands: search refuses a word every item holds (it tells nothing apart).
    for i, line in enumerate(("make invoices", "git status --short", "ls -la docs")):
        command = tool_payload("s-paths", cwd, "Bash", {"command": line},
                               {"stdout": "done"}, f"toolu_paths_{i}")  # fmt: skip
        assert run_hook("PostToolUse", command, env, cwd=cwd).returncode == 0
    return repo


def test_report_and_search_take_the_checkout_path_and_dot(
    worker: WorkerProcess, recorded: Path, backend: str, tmp_path: Path
) -> None:
    key = PROJECT if backend == "postgres" else str(recorded)
    _, sessions = worker.request("GET", "/api/sessions?limit=5")
    assert {s["project"] for s in sessions["items"]} == {key}  # the hooks' key
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd, named in ((elsewhere, str(recorded)), (recorded / "src", "."), (elsewhere, key)):
        report = worker.cli("report", "--project", named, "--json", cwd=cwd)
        assert report.returncode == 0, (named, report.stderr)
        assert json.loads(report.stdout)["sessions"] == 1, named
        search = worker.cli(
            "search", "invoices", "--project", named, "--mode", "keyword", "--json", cwd=cwd
        )
        assert search.returncode == 0, (named, search.stderr)
        assert json.loads(search.stdout)["hits"][0]["title"] == "Run: make invoices", named
    # Another checkout of nothing recorded finds nothing, on either backend.
    other = checkout(tmp_path / "laptop" / "other", AUTHOR)
    subprocess.run(["git", "remote", "set-url", "origin", "git@github.com:acme/other.git"],
                   cwd=other, check=True)  # fmt: skip
    search = worker.cli("search", "invoices", "--project", ".", "--json", cwd=other)
    assert search.returncode == 0 and json.loads(search.stdout)["hits"] == []


def test_decay_and_compress_take_the_checkout_path(worker: WorkerProcess, recorded: Path) -> None:
    for command in ("decay", "compress"):
        done = worker.cli(command, "--project", ".", "--dry-run", "--json", cwd=recorded / "src")
        assert done.returncode == 0, (command, done.stderr)
        assert json.loads(done.stdout)["dry_run"] is True


def test_the_mcp_servers_project_argument_takes_the_checkout_path(
    worker: WorkerProcess, recorded: Path, tmp_path: Path
) -> None:
    """A model passes the checkout's path (what it sees) as `project`: the server keys it as
    the hooks do. The server itself runs elsewhere, so its default project is not this one."""
    from tests.e2e.test_mcp_server import run_with_session, text_of

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def search(session: Any) -> list[str]:
        texts = []
        for project in (str(recorded), None):
            args = {"query": "invoices", "mode": "keyword"}
            result = await session.call_tool(
                "search", args | ({"project": project} if project else {})
            )
            texts.append(text_of(result))
        return texts

    named, default = run_with_session(worker.home, elsewhere, search, worker.env_extra)
    assert "Run: make invoices" in named
    assert "Run: make invoices" not in default  # the default project (elsewhere) holds nothing
