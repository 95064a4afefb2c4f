"""The real Gemini CLI (npm @google/gemini-cli) with Cairn's hooks: the cases every agent runs (tests/e2e/agent_cli_cases.py)."""

from __future__ import annotations

import pytest

from tests.e2e.agent_cli_cases import (  # noqa: F401 - the fixture and the cases run here
    agent,
    test_a_a_session_is_stored_with_its_agent_and_failing_command,
    test_b_a_claude_code_finding_reaches_the_agent_s_next_session,
    test_c_a_failed_command_in_the_agent_reaches_claude_code,
    test_d_an_unrelated_prompt_elsewhere_gets_nothing,
    test_e_cairn_import_stores_a_session_as_the_live_hooks_did,
)

AGENT = "gemini"
pytestmark = [pytest.mark.both_backends, pytest.mark.e2e, pytest.mark.agent_cli]
