"""A session driven through real hook processes ends with a useful summary, checkpoint and profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.hook_runner import base, hook_env, run_hook, tool_payload
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

SID = "sess-summary-e2e"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "work" / "ledger"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    return repo


def _tool(
    env: dict[str, str], project: Path, n: int, tool: str, tin: Any, resp: Any, **extra: Any
) -> None:
    payload = {**tool_payload(SID, project, tool, tin, resp, f"toolu_{n:03d}"), **extra}
    event = "post-tool-use-failure" if "error" in extra else "post-tool-use"
    result = run_hook(event, payload, env)
    assert result.returncode == 0, result.stderr


def test_hooked_session_summary_checkpoint_and_profile(
    worker: WorkerProcess, project: Path
) -> None:
    env = hook_env(worker.home, CAIRN_PORT=str(worker.port))
    root = str(project)
    start = {**base(SID, project, "SessionStart"), "source": "startup"}
    assert run_hook("session-start", start, env).returncode == 0
    for text in ("Add CSV export to the ledger", "yes"):
        prompt = {**base(SID, project, "UserPromptSubmit"), "prompt": text}
        assert run_hook("user-prompt-submit", prompt, env).returncode == 0

    bash_ok = {"stdout": "12 passed", "stderr": "", "interrupted": False, "isImage": False}
    _tool(env, project, 1, "Read", {"file_path": f"{root}/src/ledger.py"}, {"type": "text"})
    _tool(
        env,
        project,
        2,
        "Write",
        {"file_path": f"{root}/src/export.py", "content": "def to_csv():\n    pass\n"},
        {"type": "create", "filePath": f"{root}/src/export.py"},
    )
    _tool(
        env,
        project,
        3,
        "Edit",
        {"file_path": f"{root}/src/ledger.py", "old_string": "a", "new_string": "b"},
        {"filePath": f"{root}/src/ledger.py"},
    )
    _tool(env, project, 4, "Bash", {"command": "pytest -q", "description": "Run tests"}, bash_ok)
    _tool(
        env,
        project,
        5,
        "Bash",
        {"command": "ruff check src"},
        None,
        hook_event_name="PostToolUseFailure",
        error="Exit code 1\nsrc/export.py:1:1: F401",
    )
    todos = {
        "todos": [
            {"content": "Write the CSV writer", "status": "completed", "activeForm": "Writing"},
            {"content": "Fix lint", "status": "in_progress", "activeForm": "Fixing lint"},
            {"content": "Document the export", "status": "pending", "activeForm": "Documenting"},
        ]
    }
    _tool(env, project, 6, "TodoWrite", todos, {"oldTodos": [], "newTodos": []})

    compact = {**base(SID, project, "PreCompact"), "trigger": "auto", "custom_instructions": ""}
    assert run_hook("pre-compact", compact, env).returncode == 0
    status, checkpoint = worker.request("GET", f"/api/sessions/{SID}/checkpoint")
    assert status == 200, checkpoint
    assert checkpoint["trigger"] == "auto"
    assert checkpoint["task"] == "Add CSV export to the ledger"
    assert "In progress: Fix lint" in checkpoint["progress"]
    assert checkpoint["next_steps"][:2] == ["Continue: Fix lint", "Document the export"]
    assert "Fix the failing `ruff check src` (exit 1)" in checkpoint["next_steps"]
    assert checkpoint["files"] == ["src/ledger.py", "src/export.py"]

    message = (
        "CSV export works.\n\nThe root cause of the odd totals was that refunds are stored "
        "as negative rows.\n\nNext steps:\n- add an --since flag to the export"
    )
    stop = {
        **base(SID, project, "Stop"),
        "stop_hook_active": False,
        "last_assistant_message": message,
    }
    assert run_hook("stop", stop, env).returncode == 0
    assert run_hook("stop", {**stop, "stop_hook_active": True}, env).returncode == 0
    status, summary = worker.request("GET", f"/api/sessions/{SID}/summary")
    assert status == 200, summary
    assert summary["request"] == "Add CSV export to the ledger"
    assert summary["files"] == ["src/export.py", "src/ledger.py"]
    assert "Write the CSV writer" in summary["completed"]
    assert "Ran `pytest -q` (succeeded)" in summary["completed"]
    assert not any("ruff" in item for item in summary["completed"])
    assert summary["learned"][0].startswith("The root cause of the odd totals")
    assert "add an --since flag to the export" in summary["next_steps"]
    # The closing message is also the turn's answer, searchable as an observation; the Stop
    # that fires again for the same turn adds no second one.
    status, answers = worker.request("GET", f"/api/observations?session_id={SID}&type=answer")
    assert status == 200, answers
    (answer,) = answers["items"]
    assert answer["title"] == "CSV export works."
    assert answer["body"].startswith("The root cause of the odd totals")
    assert not any("answer" in item or "CSV export works" in item for item in summary["completed"])
    status, facts = worker.request("GET", f"/api/memories?project={root}&kind=fact")
    assert status == 200
    assert [m["content"] for m in facts["items"]] == [summary["learned"][0]]

    status, profile = worker.request("GET", f"/api/profile?project={root}")
    assert status == 200, profile
    assert profile["static"]["languages"][0]["language"] == "Python"
    assert profile["static"]["commands"] == [
        {
            "command": "pytest -q",
            "kind": "test",
            "runs": 1,
            "last_at": profile["static"]["commands"][0]["last_at"],
        }
    ]
    assert profile["static"]["folders"] == [{"folder": "src/", "files": 2}]
    assert profile["dynamic"]["in_progress"] == ["Fix lint"]
    assert "`pytest -q` (test)" in profile["text"]
