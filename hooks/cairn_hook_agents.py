"""Each coding agent's hook events as the one event model the hook handles: Claude Code's.

`cairn_hook.py --agent NAME EVENT` runs for Codex CLI, Gemini CLI, Copilot CLI or Cursor the
same code Claude Code's events run: this module turns the agent's payload into Claude Code's
shape (event name, `session_id`, `cwd`, `prompt`, `tool_name` Bash/Read/Write/Edit/..., a
`tool_response` with the command's exit code, `last_assistant_message`) and the context back
into the JSON the agent reads. Contracts, read from each agent's source and checked against
the real CLIs (docs/agents.md): Codex CLI 0.169 and Gemini CLI 0.61 take Claude Code's
`hookSpecificOutput.additionalContext`; Copilot CLI 1.0 a top-level `additionalContext`
(registered under Claude Code's event names, it sends Claude Code's snake_case fields);
Cursor a top-level `additional_context` at session start only (no hook of Cursor's can add
context to a prompt). Pure functions but for reading a transcript's tail (Codex's exit codes,
Copilot's closing message). Stdlib only.
"""

from __future__ import annotations

import json
import os
import re

from cairn_hook_shell import as_research
from cairn_hook_transcript import CODEX_EXIT, codex_exit_code, copilot_last_message

AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor")
DEFAULT = "claude-code"

# Each agent's own event names -> the event the hook handles (unlisted names are ignored).
NATIVE_EVENTS: dict[str, dict[str, str]] = {
    "codex": {
        "SessionStart": "SessionStart",
        "UserPromptSubmit": "UserPromptSubmit",
        "PostToolUse": "PostToolUse",
        "Stop": "Stop",
        "PreCompact": "PreCompact",
        "PostCompact": "PostCompact",
        "SessionEnd": "SessionEnd",
    },
    "gemini": {
        "SessionStart": "SessionStart",
        "BeforeAgent": "UserPromptSubmit",
        "AfterTool": "PostToolUse",
        "AfterAgent": "Stop",
        # Not PreCompress: Gemini CLI 0.61 fires it before every model turn.
        "SessionEnd": "SessionEnd",
    },
    "copilot": {
        "SessionStart": "SessionStart",
        "sessionStart": "SessionStart",
        "UserPromptSubmit": "UserPromptSubmit",
        "userPromptSubmitted": "UserPromptSubmit",
        "PostToolUse": "PostToolUse",
        "postToolUse": "PostToolUse",
        "PostToolUseFailure": "PostToolUseFailure",
        "postToolUseFailure": "PostToolUseFailure",
        "Stop": "Stop",
        "agentStop": "Stop",
        "PreCompact": "PreCompact",
        "preCompact": "PreCompact",
        "SessionEnd": "SessionEnd",
        "sessionEnd": "SessionEnd",
    },
    "cursor": {
        "sessionStart": "SessionStart",
        "beforeSubmitPrompt": "UserPromptSubmit",
        "postToolUse": "PostToolUse",
        "postToolUseFailure": "PostToolUseFailure",
        "afterAgentResponse": "Stop",
        "preCompact": "PreCompact",
        "sessionEnd": "SessionEnd",
    },
}

# Where the agent reads context from a hook: the events that may inject.
INJECTS: dict[str, tuple[str, ...]] = {
    "claude-code": ("SessionStart", "UserPromptSubmit"),
    "codex": ("SessionStart", "UserPromptSubmit"),
    "gemini": ("SessionStart", "UserPromptSubmit"),
    "copilot": ("SessionStart", "UserPromptSubmit"),
    "cursor": ("SessionStart",),
}

# Tool names of other agents -> Claude Code's (the observation model's vocabulary).
TOOLS: dict[str, str] = {
    # Gemini CLI
    "run_shell_command": "Bash",
    "read_file": "Read",
    "read_many_files": "Read",
    "write_file": "Write",
    "replace": "Edit",
    "edit": "Edit",
    "glob": "Glob",
    "search_file_content": "Grep",
    "grep_search": "Grep",
    "list_directory": "LS",
    "web_fetch": "WebFetch",
    "google_web_search": "WebSearch",
    # Copilot CLI (its camelCase events name tools so)
    "bash": "Bash",
    "view": "Read",
    "create": "Write",
    "rg": "Grep",
    "task": "Agent",
    # Cursor
    "Shell": "Bash",
    "Delete": "Delete",
    "Task": "Agent",
}
# Input keys of other agents -> Claude Code's.
INPUT_KEYS = {
    "absolute_path": "file_path",
    "dir_path": "path",
    "old_str": "old_string",
    "new_str": "new_string",
    "file_text": "content",
    "cmd": "command",
}

_HOOK_CONTEXT = re.compile(r"\s*<hook_context>.*?</hook_context>\s*", re.S)
_EXIT_LINES = (
    re.compile(r"<shellId: [^>]*exit code (-?\d+)>"),  # Copilot CLI
    re.compile(r"^Exit Code: (-?\d+)\s*$", re.M),  # Gemini CLI
    CODEX_EXIT,
    re.compile(r"^Exit code: (-?\d+)\s*$", re.M),
)
_UNTRUSTED = re.compile(r"</?untrusted_context>")


def agent_of(argv: list[str]) -> tuple[str, list[str]]:
    """`--agent NAME` (or `--agent=NAME`) taken out of argv; Claude Code when absent or unknown."""
    rest: list[str] = []
    agent = DEFAULT
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--agent":
            agent = argv[i + 1].strip().lower() if i + 1 < len(argv) else DEFAULT
            i += 2
            continue
        if arg.startswith("--agent="):
            agent = arg.split("=", 1)[1].strip().lower()
        else:
            rest.append(arg)
        i += 1
    return (agent if agent in AGENTS else DEFAULT), rest


def native_event(agent: str, name: object) -> str:
    """The hook's event for an agent's own event name ('' when it is not one we handle)."""
    if not isinstance(name, str):
        return ""
    return NATIVE_EVENTS.get(agent, {}).get(name, "")


def injects(agent: str, event: str) -> bool:
    return event in INJECTS.get(agent, ())


def render(agent: str, event: str, context: str) -> str:
    """The agent's JSON for context to add to the conversation ('' where it cannot take any)."""
    if not context or not injects(agent, event):
        return ""
    if agent == "copilot":
        body: dict[str, object] = {"additionalContext": context}
    elif agent == "cursor":
        body = {"additional_context": context}
    else:
        body = {
            "hookSpecificOutput": {
                "hookEventName": _native_name(agent, event),
                "additionalContext": context,
            }
        }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _native_name(agent: str, event: str) -> str:
    if agent == "gemini" and event == "UserPromptSubmit":
        return "BeforeAgent"
    return event


# --------------------------------------------------------------------------- payloads
def translate(agent: str, event: str, payload: dict[str, object]) -> dict[str, object]:
    """`payload` in Claude Code's shape for `event` (a new dict; the input is not changed)."""
    if agent == DEFAULT:
        return payload
    out = dict(payload)
    _camel_to_snake(out)
    if agent == "cursor":
        _cursor_common(out)
    elif agent == "gemini":
        from cairn_hook_gemini import name_ids

        name_ids(event, out)  # before the tool's name and input are Claude Code's
    if isinstance(out.get("prompt"), str):
        out["prompt"] = _HOOK_CONTEXT.sub("", str(out["prompt"]), count=1).strip()
        if agent == "codex" and isinstance(out.get("turn_id"), str):
            out.setdefault("prompt_id", out["turn_id"])  # the id `cairn import codex` gives it
    if event in ("PostToolUse", "PostToolUseFailure"):
        _tool(agent, out)
    elif event == "Stop":
        _stop(agent, out)
    elif event == "SessionStart" and agent == "copilot":
        source = out.get("source")
        if source == "new":
            out["source"] = "startup"
    out["hook_event_name"] = event
    return out


_CAMEL = {
    "sessionId": "session_id",
    "toolName": "tool_name",
    "toolArgs": "tool_input",
    "toolResult": "tool_response",
    "transcriptPath": "transcript_path",
    "hookEventName": "hook_event_name",
    "initialPrompt": "initial_prompt",
}


def _camel_to_snake(out: dict[str, object]) -> None:
    for camel, snake in _CAMEL.items():
        if camel in out and snake not in out:
            out[snake] = out.pop(camel)
    if "tool_result" in out and "tool_response" not in out:
        out["tool_response"] = out.pop("tool_result")


def _cursor_common(out: dict[str, object]) -> None:
    if not out.get("session_id") and isinstance(out.get("conversation_id"), str):
        out["session_id"] = out["conversation_id"]
    cwd = out.get("cwd")
    if not (isinstance(cwd, str) and cwd):
        roots = out.get("workspace_roots")
        if isinstance(roots, list) and roots and isinstance(roots[0], str):
            out["cwd"] = roots[0]
        elif os.environ.get("CURSOR_PROJECT_DIR"):
            out["cwd"] = os.environ["CURSOR_PROJECT_DIR"]
    if "error_message" in out and "error" not in out:
        out["error"] = out["error_message"]
    if out.get("failure_type") == "timeout" or out.get("is_interrupt") is True:
        out["is_interrupt"] = True


def _tool(agent: str, out: dict[str, object]) -> None:
    name = out.get("tool_name")
    if not isinstance(name, str):
        return
    if agent == "cursor" and name.startswith("MCP:"):
        out["tool_name"] = "mcp__cursor__" + name[4:].strip()
    elif agent == "gemini" and name.startswith("mcp_") and not name.startswith("mcp__"):
        server, _, tool = name[4:].partition("_")  # mcp_<server>_<tool>
        out["tool_name"] = f"mcp__{server}__{tool}"
    else:
        out["tool_name"] = TOOLS.get(name, name)
    tin = out.get("tool_input")
    if isinstance(tin, str):  # Cursor sends some inputs as JSON text
        tin = _json(tin)
    if isinstance(tin, dict):
        tin = {INPUT_KEYS.get(k, k): v for k, v in tin.items()}
        if (
            "file_path" not in tin
            and isinstance(tin.get("path"), str)
            and out["tool_name"]
            in (
                "Read",
                "Write",
                "Edit",
            )
        ):
            tin["file_path"] = tin["path"]
        out["tool_input"] = tin
    response = out.get("tool_response")
    if response is None and "tool_output" in out:
        response = out.get("tool_output")
    if isinstance(response, str) and agent == "cursor":
        response = _json(response) if response.lstrip().startswith("{") else response
    if isinstance(response, dict) and not out.get("error"):
        error = response.get("error")  # Gemini CLI: a tool that failed (not a shell exit code)
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message.strip():
            out["error"] = message
    if out["tool_name"] == "Bash":
        out["tool_response"] = _command_response(agent, out, response)
        if agent == "codex":
            as_research(out)
    else:
        out["tool_response"] = _plain(response)


def _command_response(agent: str, out: dict[str, object], response: object) -> dict[str, object]:
    """A shell command's output as Claude Code's Bash response, with the exit code when the
    agent says it (Gemini and Copilot in the text, Cursor as exitCode, Codex in its transcript)."""
    code: int | None = None
    if isinstance(response, dict):
        for key in ("exitCode", "exit_code"):
            if isinstance(response.get(key), int):
                code = int(response[key])  # type: ignore[arg-type]
        text = ""
        for key in ("output", "stdout", "text_result_for_llm", "textResultForLlm", "llmContent"):
            if isinstance(response.get(key), str):
                text = str(response[key])
                break
        if not text and isinstance(response.get("returnDisplay"), str):
            text = str(response["returnDisplay"])
    else:
        text = response if isinstance(response, str) else ""
    if code is None:
        for pattern in _EXIT_LINES:
            match = pattern.search(text)
            if match:
                code = int(match.group(1))
                break
    if code is None and agent == "codex":
        code = codex_exit_code(out.get("transcript_path"), out.get("tool_use_id"))
    if code is None and agent == "gemini" and isinstance(response, dict):
        code = 0  # Gemini CLI writes "Exit Code: N" only for a command that failed
    text = _UNTRUSTED.sub("", text)
    for pattern in _EXIT_LINES:
        text = pattern.sub("", text)
    text = re.sub(r"^Process Group PGID: \d+\s*$", "", text, flags=re.M).strip("\n")
    if text.startswith("Output: "):  # Gemini CLI's
        text = text[len("Output: ") :]
    body: dict[str, object] = {"stdout": text.strip("\n")}
    if code is not None:
        body["exit_code"] = code
    return body


def _plain(response: object) -> object:
    if isinstance(response, dict):
        for key in ("textResultForLlm", "text_result_for_llm", "returnDisplay", "llmContent"):
            if isinstance(response.get(key), str):
                return _UNTRUSTED.sub("", str(response[key])).strip()
    return response


def _stop(agent: str, out: dict[str, object]) -> None:
    message = out.get("last_assistant_message")
    if isinstance(message, str) and message.strip():
        return
    for key in ("prompt_response", "text"):  # Gemini's AfterAgent, Cursor's afterAgentResponse
        value = out.get(key)
        if isinstance(value, str) and value.strip():
            out["last_assistant_message"] = value
            return
    if agent == "copilot":
        out["last_assistant_message"] = copilot_last_message(out.get("transcript_path"))


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text
