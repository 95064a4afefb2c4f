"""The real Codex CLI (npm @openai/codex) with Cairn's hooks: the cases every agent runs (tests/e2e/agent_cli_cases.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.e2e.agent_cli_cases import (  # noqa: F401 - the fixture and the cases run here
    agent,
    cairn,
    failing_check,
    repo_of,
    test_a_a_session_is_stored_with_its_agent_and_failing_command,
    test_b_a_claude_code_finding_reaches_the_agent_s_next_session,
    test_c_a_failed_command_in_the_agent_reaches_claude_code,
    test_d_an_unrelated_prompt_elsewhere_gets_nothing,
    test_e_cairn_import_stores_a_session_as_the_live_hooks_did,
)
from tests.e2e.agent_clis import Agent, Worker

AGENT = "codex"
pytestmark = [pytest.mark.both_backends, pytest.mark.e2e, pytest.mark.agent_cli]


def test_f_hooks_installed_in_the_project_run_in_codex(agent: Agent) -> None:  # noqa: F811
    """`cairn install --agent codex --project`: the repository's .codex/hooks.json (trusted in
    the user's config.toml, as Codex asks) is what records the session."""
    env = json.loads(agent.env["CAIRN_TEST_CLAUDE_BASE"])
    repo = repo_of(agent)
    for command in (["uninstall"], ["install", "--agent", "codex", "--project", "--no-start"]):
        done = cairn(env, repo, *command)
        assert done.returncode == 0, done.stderr
    assert not (Path(env["HOME"]) / ".codex" / "hooks.json").exists()
    assert (repo / ".codex" / "hooks.json").exists()
    # The committed hooks run `cairn hook`: Cairn installed for this user, on PATH.
    agent.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{agent.env['PATH']}"
    failing_check(agent)
    worker = Worker(agent.cairn_home)
    (session,) = worker.sessions(agent="codex")
    titles = [o["title"] for o in worker.observations(session["id"])]
    assert any("(exit 1)" in t for t in titles), titles
