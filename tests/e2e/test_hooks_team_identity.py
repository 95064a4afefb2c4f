"""Real hook processes: a project keyed by its git remote only with a team database; every row
sent names its author."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.hook_runner import base, hook_env, run_hook, tool_payload
from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "checkout-on-this-laptop" / "app"
    (root / "src").mkdir(parents=True)
    for args in (["init", "-q"], ["remote", "add", "origin", "git@github.com:Acme/App.git"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def spooled(home: Path) -> list[dict[str, Any]]:
    lines = (home / "spool" / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def run_session(home: Path, repo: Path, spool: bool = True, **env: str) -> list[dict[str, Any]]:
    """SessionStart, a prompt and an Edit from a subfolder; with no worker the hooks spool."""
    hook_env_ = hook_env(home, CAIRN_AUTOSTART="0", **env)
    cwd = repo / "src"
    results = [
        run_hook(
            "SessionStart", {**base("s1", cwd, "SessionStart"), "source": "startup"}, hook_env_
        ),
        run_hook(
            "UserPromptSubmit",
            {**base("s1", cwd, "UserPromptSubmit"), "prompt": "use the retry helper"},
            hook_env_,
        ),
        run_hook(
            "PostToolUse",
            tool_payload(
                "s1",
                cwd,
                "Edit",
                {"file_path": str(repo / "src" / "retry.py"), "old_string": "a", "new_string": "b"},
                {"filePath": str(repo / "src" / "retry.py")},
                "toolu_1",
            ),
            hook_env_,
        ),
    ]
    assert [r.returncode for r in results] == [0, 0, 0]
    return spooled(home) if spool else []


def test_a_team_database_keys_events_by_the_remote_and_files_stay_relative(
    isolated_home: Path, repo: Path
) -> None:
    records = run_session(isolated_home, repo, CAIRN_DATABASE_URL="postgresql://db.example/cairn")
    projects = {r["body"].get("project") for r in records if "project" in r["body"]}
    assert projects == {"github.com/acme/app"}
    [observation] = [r["body"] for r in records if r["path"] == "/api/observations"]
    assert observation["files"] == ["src/retry.py"]  # relative to the repository, as before
    [session] = [r["body"] for r in records if r["path"] == "/api/sessions"]
    assert session["cwd"] == str(repo / "src")  # the machine's own path stays in the session


def test_the_config_file_setting_counts_like_the_variable(isolated_home: Path, repo: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.json").write_text(json.dumps({"database_url": "postgresql://db/x"}))
    records = run_session(isolated_home, repo)
    assert {r["body"]["project"] for r in records if "project" in r["body"]} == {
        "github.com/acme/app"
    }


def test_without_a_team_database_the_key_is_the_path_as_before(
    isolated_home: Path, repo: Path
) -> None:
    records = run_session(isolated_home, repo)
    assert {r["body"]["project"] for r in records if "project" in r["body"]} == {str(repo)}


def test_every_row_of_a_hook_session_is_by_the_checkouts_git_user(
    worker: WorkerProcess, repo: Path
) -> None:
    """SessionStart names the author (git user.email of the checkout); the worker gives the
    session's prompts and observations that author, with the hooks' real requests."""
    subprocess.run(
        ["git", "config", "user.email", "ann@acme.dev"], cwd=repo, check=True, capture_output=True
    )
    run_session(worker.home, repo, spool=False, CAIRN_PORT=str(worker.port))
    _, detail = worker.request("GET", "/api/sessions/s1")
    assert detail["author"] == "ann@acme.dev"
    assert [p["author"] for p in detail["prompts"]] == ["ann@acme.dev"]
    assert [o["author"] for o in detail["observations"]] == ["ann@acme.dev"]
