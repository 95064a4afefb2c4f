"""Other agents' hook payloads in Claude Code's shape (hooks/cairn_hook_agents.py).

The payloads are the shapes the real CLIs sent when driven offline (Codex CLI 0.169.0, Gemini CLI
0.61.0, Copilot CLI 1.0.102: docs/agents.md), trimmed to what the adapter reads; Cursor's are
its documented shapes (its CLI cannot run here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hook_modules import agents, events, transcript

ROOT = "/work/ws"


def observe(agent: str, event: str, payload: dict[str, object]) -> dict[str, object] | None:
    shaped = agents.translate(agent, event, payload)
    return events.observation(shaped, ROOT, ROOT, 500, agent)


# --------------------------------------------------------------------------- the command line
@pytest.mark.parametrize(
    ("argv", "agent", "rest"),
    [
        (["session-start"], "claude-code", ["session-start"]),
        (["--agent", "codex", "stop"], "codex", ["stop"]),
        (["--agent=gemini", "user-prompt-submit"], "gemini", ["user-prompt-submit"]),
        (["stop", "--agent", "Copilot"], "copilot", ["stop"]),
        (["--agent", "vim", "stop"], "claude-code", ["stop"]),  # unknown: Claude Code's shapes
        (["--agent"], "claude-code", []),
    ],
)
def test_the_agent_is_named_on_the_command_line(
    argv: list[str], agent: str, rest: list[str]
) -> None:
    assert agents.agent_of(argv) == (agent, rest)


def test_each_agent_s_own_event_names_map_to_the_hook_s_events() -> None:
    assert agents.native_event("gemini", "BeforeAgent") == "UserPromptSubmit"
    assert agents.native_event("gemini", "AfterTool") == "PostToolUse"
    assert agents.native_event("gemini", "AfterAgent") == "Stop"
    assert agents.native_event("gemini", "PreCompress") == ""  # fired before every model turn
    assert agents.native_event("copilot", "userPromptSubmitted") == "UserPromptSubmit"
    assert agents.native_event("copilot", "agentStop") == "Stop"
    assert agents.native_event("cursor", "beforeSubmitPrompt") == "UserPromptSubmit"
    assert agents.native_event("cursor", "afterAgentResponse") == "Stop"
    assert agents.native_event("codex", "PermissionRequest") == ""
    assert agents.native_event("codex", None) == ""


# --------------------------------------------------------------------------- output
def test_context_goes_back_in_each_agent_s_own_json() -> None:
    claude_like = json.loads(agents.render("codex", "UserPromptSubmit", "C"))
    assert claude_like == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "C"}
    }
    gemini = json.loads(agents.render("gemini", "UserPromptSubmit", "C"))
    assert gemini["hookSpecificOutput"] == {
        "hookEventName": "BeforeAgent",
        "additionalContext": "C",
    }
    assert json.loads(agents.render("copilot", "SessionStart", "C")) == {"additionalContext": "C"}
    assert json.loads(agents.render("cursor", "SessionStart", "C")) == {"additional_context": "C"}
    # Cursor reads no context at a prompt: nothing is printed (and none is asked for).
    assert agents.render("cursor", "UserPromptSubmit", "C") == ""
    assert not agents.injects("cursor", "UserPromptSubmit")
    assert agents.render("codex", "SessionStart", "") == ""


# --------------------------------------------------------------------------- Codex CLI
def rollout_line(call_id: str, code: int) -> str:
    item = {"type": "CommandExecution", "id": call_id, "status": "failed", "exit_code": code}
    return json.dumps({"type": "event_msg", "payload": {"type": "item_completed", "item": item}})


def test_codex_a_failed_command_gets_its_exit_code_from_the_transcript(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(
        "\n".join([json.dumps({"type": "session_meta"}), rollout_line("call_6", 2)]) + "\n"
    )
    payload = {
        "session_id": "S",
        "turn_id": "T",
        "transcript_path": str(rollout),
        "cwd": ROOT,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls /nonexistent"},
        "tool_response": "ls: cannot access '/nonexistent': No such file or directory\n",
        "tool_use_id": "call_6",
    }
    obs = observe("codex", "PostToolUse", payload)
    assert obs is not None
    assert obs["title"] == "Run: ls /nonexistent (exit 2)"
    assert "exit code: 2" in str(obs["body"])
    assert "No such file" in str(obs["body"])
    assert obs["meta"] == {"source": "codex", "tool_use_id": "call_6"}
    # Not in the transcript (yet): the code is unknown, not made up.
    payload["tool_use_id"] = "call_9"
    obs = observe("codex", "PostToolUse", payload)
    assert obs is not None and "exit" not in str(obs["title"])


@pytest.mark.parametrize(
    ("command", "title"),
    [
        ("cat calc.py", "Read calc.py"),
        ("sed -n '20,59p' src/app.rs", "Read src/app.rs (lines 20-59)"),
        ("nl -ba src/x.go", "Read src/x.go"),
        ("head -n 40 README.md", "Read README.md (lines 1-40)"),
        ("cat a.py | grep x", "Run: cat a.py | grep x"),  # more than a read
        ("cat a.py b.py", "Run: cat a.py b.py"),
        ('rg -n "useQuery(" src', "Grep 'useQuery(' in src"),
        ("grep -rn TODO", "Grep 'TODO'"),
        ('rg --files -g "*.py"', "Glob *.py"),
        ("rg -n x src tests lib", "Run: rg -n x src tests lib"),
    ],
)
def test_codex_a_command_that_only_reads_or_searches_is_research(
    tmp_path: Path, command: str, title: str
) -> None:
    """Codex CLI has no read or search tool: `cat`/`sed -n`/`nl`/`head` of one file, `rg`/`grep`
    of the tree, once they succeeded, are recorded as Claude Code's Read, Grep or Glob
    (research, not a command run)."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(rollout_line("call_1", 0) + "\n" + rollout_line("call_2", 1) + "\n")
    payload = {
        "session_id": "S",
        "transcript_path": str(rollout),
        "cwd": ROOT,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": "src/a.py:3:print(1)\n",
        "tool_use_id": "call_1",
    }
    obs = observe("codex", "PostToolUse", payload)
    assert obs is not None and obs["title"] == title
    if title.startswith("Read"):  # a read that failed stays the command, with its error
        failed = observe("codex", "PostToolUse", {**payload, "tool_use_id": "call_2"})
        assert failed is not None and str(failed["title"]).startswith(f"Run: {command}")


def test_codex_apply_patch_is_a_write_of_the_files_it_names() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** Update File: src/app.py\n"
        "@@\n-a\n+b\n*** End Patch\n"
    )
    obs = observe(
        "codex",
        "PostToolUse",
        {
            "session_id": "S",
            "cwd": ROOT,
            "tool_name": "apply_patch",
            "tool_input": {"command": patch},
            "tool_response": "Exit code: 0\nOutput:\nSuccess.",
            "tool_use_id": "call_9",
        },
    )
    assert obs is not None
    assert obs["type"] == "file_write"
    assert obs["files"] == ["hello.txt", "src/app.py"]
    assert obs["title"] == "Patch hello.txt, src/app.py"
    # Read as an Edit reads: what each file lost and gained, not the patch syntax.
    assert obs["body"] == "hello.txt new: hello\nsrc/app.py old: a\nsrc/app.py new: b"
    single = observe(
        "codex",
        "PostToolUse",
        {
            "session_id": "S",
            "cwd": ROOT,
            "tool_name": "apply_patch",
            "tool_input": {
                "command": "*** Begin Patch\n*** Update File: calc.py\n@@\n-a + b + 1\n+a + b\n*** End Patch\n"
            },
            "tool_use_id": "call_10",
        },
    )
    assert single is not None and single["body"] == "old: a + b + 1\nnew: a + b"


def test_codex_stop_keeps_its_closing_message() -> None:
    shaped = agents.translate(
        "codex",
        "Stop",
        {"session_id": "S", "last_assistant_message": "All done.", "stop_hook_active": False},
    )
    assert shaped["last_assistant_message"] == "All done."


# --------------------------------------------------------------------------- Gemini CLI
GEMINI_TOOL = {
    "session_id": "2f72bf57",
    "transcript_path": "/home/u/.gemini/tmp/ws/chats/session.jsonl",
    "cwd": ROOT,
    "hook_event_name": "AfterTool",
    "timestamp": "2026-12-07T00:40:33.205Z",
    "tool_name": "run_shell_command",
}


def test_gemini_a_shell_command_and_its_exit_code() -> None:
    failed = observe(
        "gemini",
        "PostToolUse",
        {
            **GEMINI_TOOL,
            "tool_input": {"command": "ls /nonexistent_dir", "description": "failing command"},
            "tool_response": {
                "llmContent": "<untrusted_context>\nOutput: ls: cannot access '/nonexistent_dir'"
                ": No such file or directory\nExit Code: 2\nProcess Group PGID: 9443\n"
                "</untrusted_context>",
                "returnDisplay": "ls: cannot access '/nonexistent_dir': No such file or directory",
            },
        },
    )
    assert failed is not None
    assert failed["title"] == "Run: failing command (exit 2)"
    body = str(failed["body"])
    assert "exit code: 2" in body and "No such file" in body
    assert "PGID" not in body and "untrusted_context" not in body
    passed = observe(
        "gemini",
        "PostToolUse",
        {
            **GEMINI_TOOL,
            "tool_input": {"command": "cat notes.txt", "description": "show notes"},
            "tool_response": {
                "llmContent": "<untrusted_context>\nOutput: alpha line\nbeta line\n"
                "Process Group PGID: 9193\n</untrusted_context>",
                "returnDisplay": "alpha line\nbeta line",
            },
        },
    )
    assert passed is not None
    assert "exit code: 0" in str(passed["body"]) and "stdout: alpha line" in str(passed["body"])


def test_gemini_file_tools_name_their_files() -> None:
    edit = observe(
        "gemini",
        "PostToolUse",
        {
            **GEMINI_TOOL,
            "tool_name": "replace",
            "tool_input": {
                "file_path": f"{ROOT}/calc.py",
                "old_string": "a + b + 1",
                "new_string": "a + b",
            },
            "tool_response": {"llmContent": "Successfully modified file", "returnDisplay": ""},
        },
    )
    assert edit is not None and edit["title"] == "Edit calc.py" and edit["files"] == ["calc.py"]
    read = observe(
        "gemini",
        "PostToolUse",
        {**GEMINI_TOOL, "tool_name": "read_file", "tool_input": {"absolute_path": f"{ROOT}/a.md"}},
    )
    assert read is not None and read["title"] == "Read a.md"
    missing = observe(
        "gemini",
        "PostToolUse",
        {
            **GEMINI_TOOL,
            "tool_name": "read_file",
            "tool_input": {"file_path": f"{ROOT}/gone.md"},
            "tool_response": {
                "llmContent": "File not found: gone.md",
                "returnDisplay": "File not found.",
                "error": {"message": "File not found: gone.md", "type": "file_not_found"},
            },
        },
    )
    assert missing is not None and missing["title"] == "Read gone.md (failed)"
    own = observe(
        "gemini",
        "PostToolUse",
        {**GEMINI_TOOL, "tool_name": "mcp_cairn_search", "tool_input": {"query": "x"}},
    )
    assert own is None  # Cairn's own MCP tools are never observed


def test_gemini_prompts_lose_the_session_start_context_it_prepends() -> None:
    shaped = agents.translate(
        "gemini",
        "UserPromptSubmit",
        {
            **GEMINI_TOOL,
            "hook_event_name": "BeforeAgent",
            "prompt": "<hook_context>&lt;cairn-context&gt; lessons ...</hook_context>\n\n"
            "Please read notes.txt",
        },
    )
    assert shaped["prompt"] == "Please read notes.txt"
    assert shaped["hook_event_name"] == "UserPromptSubmit"
    stop = agents.translate(
        "gemini",
        "Stop",
        {
            **GEMINI_TOOL,
            "prompt": "x",
            "prompt_response": "FINAL: read.",
            "stop_hook_active": False,
        },
    )
    assert stop["last_assistant_message"] == "FINAL: read."


# --------------------------------------------------------------------------- Copilot CLI
COPILOT = {"session_id": "9e7587ec", "timestamp": "2026-12-07T00:38:08.807Z", "cwd": ROOT}


def test_copilot_shell_results_carry_their_exit_code() -> None:
    obs = observe(
        "copilot",
        "PostToolUse",
        {
            **COPILOT,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q", "description": "Run the tests"},
            "tool_result": {
                "result_type": "success",
                "text_result_for_llm": "1 failed\n<shellId: 0 completed with exit code 1>",
            },
        },
    )
    assert obs is not None
    assert obs["title"] == "Run the tests (exit 1)"
    assert "<shellId" not in str(obs["body"]) and "stdout: 1 failed" in str(obs["body"])


def test_copilot_camel_case_payloads_read_the_same() -> None:
    shaped = agents.translate(
        "copilot",
        "PostToolUseFailure",
        {
            "sessionId": "s1",
            "timestamp": 1796603876439,
            "cwd": ROOT,
            "toolName": "view",
            "toolArgs": {"path": f"{ROOT}/missing.txt"},
            "error": "Path does not exist",
        },
    )
    assert shaped["session_id"] == "s1"
    obs = events.observation(shaped, ROOT, ROOT, 500, "copilot")
    assert obs is not None
    assert obs["title"] == "Read missing.txt (failed)" and obs["files"] == ["missing.txt"]


def test_copilot_stop_reads_the_closing_message_from_its_events_file(tmp_path: Path) -> None:
    state = tmp_path / "events.jsonl"
    earlier = [
        {"type": "user.message", "data": {"content": "read notes"}},
        {"type": "assistant.message", "data": {"content": "Old answer.", "toolRequests": []}},
        {"type": "user.message", "data": {"content": "and now?"}},
        {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "bash"}]}},
        {"type": "tool.execution_complete", "data": {"success": True}},
    ]
    state.write_text("\n".join(json.dumps(r) for r in earlier) + "\n")
    stop = {**COPILOT, "transcript_path": str(state), "stop_reason": "end_turn"}
    # Not written yet when the hook runs: nothing, never the older turn's answer.
    assert transcript.copilot_last_message(str(state), wait=0.2) == ""
    closing = [
        {"type": "assistant.message", "data": {"content": "The notes say hello."}},
        {"type": "assistant.turn_end", "data": {}},
        {"type": "hook.start", "data": {"hookType": "agentStop"}},
    ]
    with state.open("a") as handle:
        handle.write("\n".join(json.dumps(r) for r in closing) + "\n")
    shaped = agents.translate("copilot", "Stop", stop)
    assert shaped["last_assistant_message"] == "The notes say hello."
    start = agents.translate("copilot", "SessionStart", {**COPILOT, "source": "new"})
    assert start["source"] == "startup"


# --------------------------------------------------------------------------- Cursor
CURSOR = {
    "conversation_id": "c-1",
    "generation_id": "g-1",
    "hook_event_name": "postToolUse",
    "cursor_version": "3.9.16",
    "workspace_roots": [ROOT],
    "transcript_path": None,
}


def test_cursor_shell_and_files() -> None:
    shell = observe(
        "cursor",
        "PostToolUse",
        {
            **CURSOR,
            "tool_name": "Shell",
            "tool_input": {"command": "npm test", "cwd": ROOT},
            "tool_output": json.dumps({"output": "2 passing", "exitCode": 0}),
            "tool_use_id": "u-1",
        },
    )
    assert shell is not None
    assert shell["title"] == "Run: npm test" and "exit code: 0" in str(shell["body"])
    shaped = agents.translate("cursor", "PostToolUse", {**CURSOR, "tool_name": "Read"})
    assert shaped["session_id"] == "c-1" and shaped["cwd"] == ROOT
    failed = observe(
        "cursor",
        "PostToolUseFailure",
        {
            **CURSOR,
            "tool_name": "Write",
            "tool_input": {"file_path": f"{ROOT}/a.ts"},
            "error_message": "permission denied",
            "failure_type": "permission_denied",
        },
    )
    assert failed is not None and str(failed["title"]).endswith("(failed)")


def test_cursor_agent_response_is_the_turn_s_closing_message() -> None:
    shaped = agents.translate("cursor", "Stop", {**CURSOR, "text": "Done: tests pass."})
    assert shaped["last_assistant_message"] == "Done: tests pass."


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("agent", ["codex", "gemini", "copilot", "cursor"])
@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"])
@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"tool_name": 3, "tool_input": "not json", "tool_response": [1, 2]},
        {"toolName": "bash", "toolArgs": None, "toolResult": "x"},
        {"prompt": None, "transcript_path": 7, "workspace_roots": "x"},
        {"tool_name": "Bash", "tool_input": {"command": 5}, "tool_response": {"exitCode": "1"}},
    ],
)
def test_odd_shapes_never_raise(agent: str, event: str, payload: dict[str, object]) -> None:
    shaped = agents.translate(agent, event, payload)
    assert shaped["hook_event_name"] == event
    events.observation(shaped, ROOT, ROOT, 500, agent)
