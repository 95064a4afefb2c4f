"""The end-to-end cases every agent's real CLI runs (tests/e2e/test_<agent>_cli.py import them).

`cairn install --agent <agent> --agent claude-code` into a tmp HOME, a tmp git repository, and
real sessions of the agent's CLI against its scripted model stand-in; Claude Code's side of the
cross-agent cases is the real `claude` CLI (the newest pinned version; skipped, saying why, when it
is not installed). What the tests look at is what a user would: what each model was sent and what
the worker stored. The worker runs keyword-only (CAIRN_EMBED_ENABLED=0) so the runs stay quick.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.agent_clis import (
    CONTEXT_OPEN,
    PROTOCOLS,
    Agent,
    Worker,
    binary,
    configure,
    missing_reason,
    offline_env,
)
from tests.e2e.claude_code import CLAUDE_CODE_VERSIONS, claude_binary, run_claude
from tests.e2e.claude_code import missing_reason as claude_missing
from tests.e2e.claude_code import offline_env as claude_env
from tests.e2e.messages_api import MessagesAPI, Text
from tests.e2e.model_apis import ModelAPI, Patch, Say, Shell
from tests.e2e.test_claude_code import git_repo
from tests.e2e.test_install_e2e import cairn
from tests.e2e.worker_process import free_port

FIX = "sed -i 's/a + b + 1/a + b/' calc.py"
CODEX_FIX = (
    "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n"
    "-    return a + b + 1\n+    return a + b\n*** End Patch\n"
)
DECISION = "Billing exports keep every timestamp in UTC (ISO 8601), never local time."


@pytest.fixture
def agent(
    request: pytest.FixtureRequest,
    isolated_home: Path,
    user_home: Path,
    tmp_path: Path,
    backend: str,
) -> Iterator[Agent]:
    name = str(request.module.AGENT)
    path = binary(name)
    if path is None:
        pytest.skip(missing_reason(name))
    api = ModelAPI(PROTOCOLS[name]).start()
    repo = git_repo(tmp_path / "repo")
    configure(name, user_home, api.url, repo)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "CLAUDE"))}
    base.update(
        {
            "HOME": str(user_home),
            "CAIRN_HOME": str(isolated_home),
            "CAIRN_PORT": str(free_port()),
            "CAIRN_EMBED_ENABLED": "0",
        }
    )
    if backend == "postgres":  # the backend fixture named the test's team database
        base["CAIRN_DATABASE_URL"] = os.environ["CAIRN_DATABASE_URL"]
    installed = cairn(base, tmp_path, "install", "--agent", name, "--agent", "claude-code")
    assert installed.returncode == 0, installed.stderr
    state = Agent(name, path, offline_env(name, base, user_home, api.url), isolated_home, api)
    state.env["CAIRN_TEST_REPO"] = str(repo)
    state.env["CAIRN_TEST_CLAUDE_BASE"] = json.dumps(base)
    try:
        yield state
    finally:
        api.stop()
        if (isolated_home / "worker.json").exists():  # the worker this test's hooks started
            with contextlib.suppress(ProcessLookupError, ValueError, KeyError, OSError):
                os.kill(Worker(isolated_home).pid(), signal.SIGTERM)


def repo_of(agent: Agent) -> Path:
    return Path(agent.env["CAIRN_TEST_REPO"])


def claude(agent: Agent, prompt: str, answer: str, cwd: Path) -> str:
    """One real Claude Code session (the newest pinned CLI): what its model was first sent."""
    version = CLAUDE_CODE_VERSIONS[-1]
    path = claude_binary(version)
    if path is None:
        pytest.skip(claude_missing(version))
    api = MessagesAPI().start()
    try:
        api.script([[Text(answer)]])
        env = claude_env(json.loads(agent.env["CAIRN_TEST_CLAUDE_BASE"]), api.url)
        result = run_claude(path, ["-p", prompt], cwd=cwd, env=env)
        assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
        return api.agent_requests()[0].text()
    finally:
        api.stop()


def failing_check(agent: Agent) -> None:
    """A session in the agent: the check fails, calc.py is fixed, the check passes."""
    fix = Patch(CODEX_FIX) if agent.name == "codex" else Shell(FIX, "Fix calc.add")
    agent.api.script(
        [
            Shell("python3 check_calc.py"),
            fix,
            Shell("python3 check_calc.py && echo check passed"),
            Say("Findings:\n- calc.add added one too many; check_calc.py passes now."),
        ]
    )
    agent.run("check_calc.py fails, please fix calc.add", repo_of(agent))


def test_a_a_session_is_stored_with_its_agent_and_failing_command(agent: Agent) -> None:
    failing_check(agent)
    assert (repo_of(agent) / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    worker = Worker(agent.cairn_home)
    sessions = worker.sessions(agent=agent.name)
    assert len(sessions) == 1, worker.sessions()
    session = worker.get(f"/api/sessions/{sessions[0]['id']}")
    assert [p["text"] for p in session["prompts"]] == ["check_calc.py fails, please fix calc.add"]
    stored = worker.observations(session["id"])
    titles = [o["title"] for o in stored]
    assert any("check_calc.py" in t and t.endswith("(exit 1)") for t in titles), titles
    assert all((o.get("meta") or {}).get("source") == agent.name for o in stored)
    if agent.name == "codex":
        assert "Patch calc.py" in titles, titles
        assert any(o["files"] == ["calc.py"] for o in stored)
    summary = worker.get(f"/api/sessions/{session['id']}/summary")
    assert "calc.add added one too many" in json.dumps(summary), summary


def test_b_a_claude_code_finding_reaches_the_agent_s_next_session(agent: Agent) -> None:
    claude(
        agent,
        "Which timezone should the billing exports use?",
        f"Findings:\n- {DECISION}",
        repo_of(agent),
    )
    Worker(agent.cairn_home).settle()
    agent.api.script([Say("UTC.")])
    agent.run("What timezone do the billing exports write timestamps in?", repo_of(agent))
    first = agent.api.agent_requests()[0].text()
    assert CONTEXT_OPEN in first, first[-3000:]
    assert "UTC (ISO 8601)" in first, first[-3000:]


def test_c_a_failed_command_in_the_agent_reaches_claude_code(agent: Agent) -> None:
    agent.api.script([Shell("python3 check_calc.py"), Say("check_calc.py fails.")])
    agent.run("run check_calc.py", repo_of(agent))
    Worker(agent.cairn_home).settle()
    first = claude(
        agent,
        "check_calc.py failed earlier: what was wrong with calc.add?",
        "It was the off-by-one in calc.add.",
        repo_of(agent),
    )
    assert "<cairn-context" in first, first[-3000:]
    assert "check_calc.py (exit 1)" in first, first[-3000:]


def test_d_an_unrelated_prompt_elsewhere_gets_nothing(agent: Agent, tmp_path: Path) -> None:
    failing_check(agent)
    Worker(agent.cairn_home).settle()
    other = git_repo(tmp_path / "other-project")
    agent.api.script([Say("Paris.")])
    agent.run("What is the capital of France?", other)
    body = agent.api.agent_requests()[0].text()
    assert CONTEXT_OPEN not in body, body[-3000:]


def test_e_cairn_import_stores_a_session_as_the_live_hooks_did(
    agent: Agent,
    tmp_path: Path,
) -> None:
    """`cairn import <agent>` (agents whose session files Cairn reads: Codex CLI, Gemini CLI)."""
    failing_check(agent)
    live = Worker(agent.cairn_home)
    session = live.sessions(agent=agent.name)[0]
    seen = sorted(o["title"] for o in live.observations(session["id"]))
    base = json.loads(agent.env["CAIRN_TEST_CLAUDE_BASE"])
    # Into the same memory: every event is already there (same ids), nothing new.
    again = cairn(base, tmp_path, "import", agent.name, "--quiet")
    assert again.returncode == 0, again.stderr
    assert sorted(o["title"] for o in live.observations(session["id"])) == seen
    assert [p["text"] for p in live.get(f"/api/sessions/{session['id']}")["prompts"]] == [
        "check_calc.py fails, please fix calc.add"
    ]
    # Into a memory that never saw it: the same session, prompt and tool calls.
    other = tmp_path / "other-cairn"
    env = {**base, "CAIRN_HOME": str(other), "CAIRN_PORT": str(free_port())}
    if "CAIRN_DATABASE_URL" in env:  # a team database: the same rows; a fresh SQLite instead
        env.pop("CAIRN_DATABASE_URL")
    fresh = cairn(env, tmp_path, "import", agent.name, "--quiet")
    try:
        assert fresh.returncode == 0, fresh.stderr
        assert "1 session" in fresh.stdout, fresh.stdout
        imported = Worker(other)
        sessions = imported.sessions(agent=agent.name)
        assert [s["id"] for s in sessions] == [session["id"]]
        assert sorted(o["title"] for o in imported.observations(session["id"])) == seen
        summary = imported.get(f"/api/sessions/{session['id']}/summary")
        assert "calc.add added one too many" in json.dumps(summary)
    finally:
        if (other / "worker.json").exists():
            with contextlib.suppress(ProcessLookupError, ValueError, KeyError, OSError):
                os.kill(Worker(other).pid(), signal.SIGTERM)
