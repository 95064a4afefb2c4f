"""The real Codex CLI (npm @openai/codex) with Cairn's hooks: the cases every agent runs (tests/e2e/agent_cli_cases.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.agent_cli_cases import (  # noqa: F401 - the fixture and the cases run here
    agent,
    failing_check,
    test_a_a_session_is_stored_with_its_agent_and_failing_command,
    test_b_a_claude_code_finding_reaches_the_agent_s_next_session,
    test_c_a_failed_command_in_the_agent_reaches_claude_code,
    test_d_an_unrelated_prompt_elsewhere_gets_nothing,
)
from tests.e2e.agent_clis import Agent, Worker
from tests.e2e.worker_process import free_port

AGENT = "codex"
pytestmark = [pytest.mark.both_backends, pytest.mark.e2e, pytest.mark.agent_cli]


def test_e_cairn_import_codex_stores_a_session_as_the_live_hooks_did(
    agent: Agent,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    failing_check(agent)
    live = Worker(agent.cairn_home)
    session = live.sessions(agent="codex")[0]
    seen = sorted(o["title"] for o in live.observations(session["id"]))
    base = json.loads(agent.env["CAIRN_TEST_CLAUDE_BASE"])
    # Into the same memory: every event is already there (same ids), nothing new.
    again = subprocess.run(
        [sys.executable, "-m", "worker", "import", "codex", "--quiet"],
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )
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
    fresh = subprocess.run(
        [sys.executable, "-m", "worker", "import", "codex", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        assert fresh.returncode == 0, fresh.stderr
        assert "1 session" in fresh.stdout, fresh.stdout
        imported = Worker(other)
        sessions = imported.sessions(agent="codex")
        assert [s["id"] for s in sessions] == [session["id"]]
        assert sorted(o["title"] for o in imported.observations(session["id"])) == seen
        summary = imported.get(f"/api/sessions/{session['id']}/summary")
        assert "calc.add added one too many" in json.dumps(summary)
    finally:
        if (other / "worker.json").exists():
            with contextlib.suppress(ProcessLookupError, ValueError, KeyError, OSError):
                os.kill(Worker(other).pid(), signal.SIGTERM)
