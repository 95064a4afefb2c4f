"""The real `claude` CLI (oldest and newest supported version) driving Cairn's installed hooks.

`cairn install` into a tmp HOME, a tmp git repository, and real `claude -p` sessions against a
scripted local Messages API (tests/e2e/messages_api.py). What the tests look at is what a user
would: what the model was sent (the recorded request bodies) and what the worker stored.
The worker runs keyword-only (CAIRN_EMBED_ENABLED=0) so the runs stay quick on 2 shared cores.
Each test runs on both backends: the worker the hooks start keeps memory in its home's SQLite file,
or in a team database (CAIRN_DATABASE_URL reaches it through the CLI's and the hooks' environment).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.backends import process_store, value
from tests.e2e.agent_clis import Worker
from tests.e2e.claude_code import (
    CLAUDE_CODE_VERSIONS,
    claude_binary,
    missing_reason,
    offline_env,
    run_claude,
)
from tests.e2e.messages_api import MessagesAPI, Text, ToolUse
from tests.e2e.worker_process import free_port

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e, pytest.mark.claude_code]

CONTEXT_OPEN = "<cairn-context"
CHECK_SCRIPT = "import calc\nassert calc.add(2, 2) == 4, f'add(2, 2) returned {calc.add(2, 2)}'\n"


@dataclass
class Setup:
    binary: Path
    version: str
    env: dict[str, str]
    home: Path
    repo: Path
    api: MessagesAPI

    def claude(self, *args: str, cwd: Path | None = None) -> list[dict[str, Any]]:
        result = run_claude(self.binary, args, cwd=cwd or self.repo, env=self.env)
        assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    @property
    def worker(self) -> Worker:
        return Worker(self.home)

    def get(self, path: str, **query: str) -> Any:
        return self.worker.get(path, **query)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.worker.post(path, body)

    def observations(self, session_id: str) -> list[dict[str, Any]]:
        return self.worker.observations(session_id)

    def settle(self) -> None:
        self.worker.settle()

    def worker_pid(self) -> int:
        return self.worker.pid()


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "calc.py").write_text("def add(a, b):\n    return a + b + 1\n")
    (path / "check_calc.py").write_text(CHECK_SCRIPT)
    for args in (
        ["init", "-q", "."],
        ["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "add", "."],
        ["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "commit", "-qm", "calc"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture(params=CLAUDE_CODE_VERSIONS)
def setup(
    request: pytest.FixtureRequest,
    isolated_home: Path,
    user_home: Path,
    tmp_path: Path,
    backend: str,
) -> Iterator[Setup]:
    version = str(request.param)
    binary = claude_binary(version)
    if binary is None:
        pytest.skip(missing_reason(version))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "CLAUDE"))}
    env.update(
        {
            "HOME": str(user_home),
            "CAIRN_HOME": str(isolated_home),
            "CAIRN_PORT": str(free_port()),
            "CAIRN_EMBED_ENABLED": "0",
        }
    )
    if backend == "postgres":  # the backend fixture named the test's team database
        env["CAIRN_DATABASE_URL"] = os.environ["CAIRN_DATABASE_URL"]
    installed = subprocess.run(
        [sys.executable, "-m", "worker", "install"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    api = MessagesAPI().start()
    state = Setup(
        binary=binary,
        version=version,
        env=offline_env(env, api.url),
        home=isolated_home,
        repo=git_repo(tmp_path / "repo"),
        api=api,
    )
    try:
        yield state
    finally:
        api.stop()
        runtime = isolated_home / "worker.json"
        if runtime.exists():  # the worker this test's install (or hooks) started
            with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
                os.kill(state.worker_pid(), signal.SIGTERM)


def fix_calc_session(setup: Setup) -> str:
    """A coding task: a failing check, a read, an edit, the check passing."""
    calc = str(setup.repo / "calc.py")
    setup.api.script(
        [
            [Text("Let me run the check."), ToolUse("Bash", {"command": "python3 check_calc.py"})],
            [ToolUse("Read", {"file_path": calc})],
            [
                ToolUse(
                    "Edit",
                    {"file_path": calc, "old_string": "a + b + 1", "new_string": "a + b"},
                )
            ],
            [ToolUse("Bash", {"command": "python3 check_calc.py && echo check passed"})],
            [Text("Fixed the off-by-one in calc.add: check_calc.py passes now.")],
        ]
    )
    events = setup.claude("-p", "check_calc.py fails, please fix calc.add")
    session_id = next(e["session_id"] for e in events if e.get("session_id"))
    assert (setup.repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    return str(session_id)


def cairn_context(body: str) -> bool:
    return CONTEXT_OPEN in body


def test_a_coding_session_is_stored_with_its_failing_command(setup: Setup, backend: str) -> None:
    session_id = fix_calc_session(setup)
    stored = setup.observations(session_id)
    by_tool = {}
    for item in stored:
        by_tool.setdefault(item.get("tool_name"), []).append(item)
    assert {"Bash", "Read", "Edit"} <= set(by_tool), stored
    failed = [o for o in by_tool["Bash"] if "add(2, 2) returned 5" in json.dumps(o)]
    assert failed, f"the failing check is not stored: {by_tool['Bash']}"
    session = setup.get(f"/api/sessions/{session_id}")
    assert any("check_calc.py fails" in p["text"] for p in session["prompts"])
    # The worker the hooks started keeps them in the test's backend (tests/backends.py).
    with process_store(setup.env) as store:
        assert store.backend == backend
        sql = "SELECT COUNT(*) FROM observations WHERE session_id = ?"
        assert value(store, sql, [session_id]) == len(stored)


def test_b_next_session_is_told_about_the_failure(setup: Setup) -> None:
    fix_calc_session(setup)
    setup.settle()
    setup.api.requests.clear()
    setup.api.script([[Text("It was the off-by-one in calc.add.")]])
    setup.claude("-p", "check_calc.py failed earlier: what was wrong with calc.add?")
    first = setup.api.agent_requests()[0].text()
    assert cairn_context(first), first[-3000:]
    # The failure and what came of it: the check failed, calc.py was edited, the check passed.
    assert "check_calc.py (exit 1)" in first, first[-3000:]
    assert "Edit calc.py" in first
    assert "Fix the failing `python3 check_calc.py`" not in first  # it passed afterwards


def test_c_unrelated_prompt_gets_no_cairn_context(setup: Setup, tmp_path: Path) -> None:
    fix_calc_session(setup)
    setup.settle()
    other = git_repo(tmp_path / "other-project")
    setup.api.requests.clear()
    setup.api.script([[Text("Paris.")]])
    setup.claude("-p", "What is the capital of France?", cwd=other)
    body = setup.api.agent_requests()[0].text()
    assert not cairn_context(body), body[-3000:]


def first_section(body: str) -> str:
    """The first `## ` heading inside the first Cairn context block of a request."""
    start = body.find(CONTEXT_OPEN)
    assert start >= 0, body[-2000:]
    heading = body.find("## ", start)
    return body[heading : body.find("\\n", heading)]


def test_d_resume_and_compact_put_the_checkpoint_first(setup: Setup) -> None:
    session_id = fix_calc_session(setup)
    setup.settle()
    setup.claude("-p", "/compact", "--resume", session_id)
    checkpoints = setup.get(f"/api/sessions/{session_id}/checkpoints")["items"]
    assert checkpoints
    if setup.version != CLAUDE_CODE_VERSIONS[0]:  # 2.1.197 never fires PostCompact
        enriched = [c for c in checkpoints if c["trigger"] == "compact"]
        assert enriched, checkpoints
        assert "Add a regression test for calc.add" in enriched[0]["next_steps"]
    setup.api.requests.clear()
    setup.api.script([[Text("Continuing.")]])
    setup.claude("-p", "go on", "--resume", session_id)
    body = setup.api.agent_requests()[0].text()
    assert first_section(body) == "## Where we left off (checkpoint)", body[-3000:]
    assert "check_calc.py fails, please fix calc.add" in body


def test_e_a_killed_worker_loses_nothing(setup: Setup) -> None:
    first = fix_calc_session(setup)
    setup.settle()
    os.kill(setup.worker_pid(), signal.SIGKILL)
    notes = str(setup.repo / "NOTES.md")
    setup.api.script(
        [
            [ToolUse("Write", {"file_path": notes, "content": "calc.add had an off-by-one\n"})],
            [ToolUse("Bash", {"command": "git status --short"})],
            [Text("Noted.")],
        ]
    )
    events = setup.claude("-p", "write down what was wrong with calc.add")
    second = next(e["session_id"] for e in events if e.get("session_id"))
    # The SessionStart hook started a new worker; whatever it could not take was spooled and
    # is replayed exactly once.
    setup.get("/health")
    titles = [o["title"] for o in setup.observations(second)]
    assert any("NOTES.md" in t for t in titles), titles
    assert any("git status" in t for t in titles), titles
    assert len(titles) == len(set(titles)), titles
    kinds = sorted(o["type"] for o in setup.observations(first))
    assert kinds == ["answer", "command", "command", "file_write", "research"], kinds


def test_f_task_tools_make_the_plan_and_agent_results_are_not_prompts(setup: Setup) -> None:
    setup.api.script(
        [
            [ToolUse("TaskCreate", {"subject": "Fix calc.add", "description": "off by one"})],
            [ToolUse("TaskCreate", {"subject": "Run the check", "description": "check_calc"})],
            [ToolUse("TaskUpdate", {"taskId": "1", "status": "completed"})],
            [
                ToolUse(
                    "Agent",
                    {
                        "description": "Find callers",
                        "prompt": "Find the callers of calc.add",
                        "subagent_type": "general-purpose",
                    },
                )
            ],
            [Text("calc.add is called from check_calc.py only.")],  # the agent's own answer
            [Text("Planned.")],
            [Text("The agent found one caller.")],  # 2.1.332: after the task notification
        ]
    )
    events = setup.claude("-p", "plan the calc fix")
    session_id = next(e["session_id"] for e in events if e.get("session_id"))
    setup.settle()
    session = setup.get(f"/api/sessions/{session_id}")
    plan = session["plan"]
    plan = plan.get("plan", plan) if isinstance(plan, dict) else plan
    assert [(p["content"], p["status"]) for p in plan] == [
        ("Fix calc.add", "completed"),
        ("Run the check", "pending"),
    ]
    assert [p["text"] for p in session["prompts"]] == ["plan the calc fix"]
    titles = [o["title"] for o in setup.observations(session_id)]
    assert not any(t.startswith(("TaskCreate", "TaskUpdate", "Task")) for t in titles), titles
    delegations = [t for t in titles if "Find callers" in t]
    assert delegations, titles
    if any(t.endswith("(in the background)") for t in delegations):  # 2.1.332: async agents
        assert any(t == 'Agent "Find callers" finished' for t in titles), titles


def test_g_a_memory_the_model_acts_on_is_recorded_as_used(setup: Setup) -> None:
    """Learning from use with the real CLI: the memory Cairn injects names a file, the scripted
    model reads that file and answers; when the turn ends Cairn records the memory as used,
    with the read as its evidence."""
    setup.settle()
    project = str(setup.repo)
    for other in (
        "Releases are tagged from main",
        "The docs are built with mkdocs",
        "CI runs on GitHub Actions",
    ):
        setup.post("/api/memories", {"kind": "fact", "content": other, "project": project})
    lesson = "calc.add is checked by check_calc.py: read calc.py before changing add"
    memory = setup.post("/api/memories", {"kind": "lesson", "content": lesson, "project": project})
    setup.api.script(
        [
            [ToolUse("Read", {"file_path": str(setup.repo / "calc.py")})],
            [Text("calc.add adds one too many; the check in check_calc.py catches it.")],
        ]
    )
    events = setup.claude("-p", "before I touch calc.py: how is calc.add checked?")
    session_id = next(e["session_id"] for e in events if e.get("session_id"))
    first = setup.api.agent_requests()[0].text()
    assert cairn_context(first) and "read calc.py before changing add" in first, first[-3000:]
    setup.settle()
    record = setup.get(f"/api/use/memory/{memory['id']}")
    assert (record["shown"], record["used"]) == (1, 1), record
    assert record["last_used"]["evidence"] == "read calc.py"
    assert record["last_used"]["session_id"] == session_id
    given = setup.get(f"/api/sessions/{session_id}")["given"]
    assert [(g["id"], g["outcome"]) for g in given if g["kind"] == "memory"] == [
        (memory["id"], "used")
    ]
