"""The coding-memory corpus (written as Claude Code's hook events) as another agent really sends it.

`bench/coding_memory.py --agent codex|gemini` replays the same sessions through that agent's
installed hooks, so each event must arrive in the shape the real CLI sends (docs/agents.md, as
captured from Codex CLI 0.169.0 and Gemini CLI 0.61.0):

- Codex CLI has no Read/Edit/Write/Grep tools: it reads with the shell (`cat`, `rg`) and writes
  with `apply_patch`; a shell call's payload holds its output text only, its exit code being in
  the session's rollout file (a `CommandExecution` item per call, written here as Codex does);
  a failed command fires PostToolUse like any other. Stop carries `last_assistant_message`.
- Gemini CLI's tools are read_file, replace, write_file, grep_search, glob, run_shell_command
  (its output `Output: ...` with `Exit Code: N` when it failed), web_fetch; the prompt event is
  BeforeAgent, the turn's end AfterAgent with `prompt_response`.

Tools an agent does not have (Claude Code's plan and delegation tools) are not sent. Pure
functions but `codex_rollout` and `recorded`, which append to the agent's own session file as the
CLI does (Codex before its hook runs, Gemini CLI after).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

AGENTS = ("claude-code", "codex", "gemini")
NATIVE = {
    "codex": {"UserPromptSubmit": "UserPromptSubmit", "PostToolUseFailure": "PostToolUse"},
    "gemini": {
        "UserPromptSubmit": "BeforeAgent",
        "PostToolUse": "AfterTool",
        "PostToolUseFailure": "AfterTool",
        "Stop": "AfterAgent",
    },
}


def _exit_code(payload: dict[str, Any]) -> int:
    if payload["hook_event_name"] != "PostToolUseFailure":
        return 0
    error = str(payload.get("error") or "")
    if error.startswith("Exit code "):
        digits = error[len("Exit code ") :].split(None, 1)[0]
        if digits.lstrip("-").isdigit():
            return int(digits)
    return 1


def _output(payload: dict[str, Any]) -> str:
    if payload["hook_event_name"] == "PostToolUseFailure":
        error = str(payload.get("error") or "")
        return error.split("\n", 1)[1] if error.startswith("Exit code ") else error
    response = payload.get("tool_response")
    if isinstance(response, dict):
        parts = [str(response.get(k) or "") for k in ("stdout", "stderr")]
        if any(parts):
            return "\n".join(p for p in parts if p)
        read = response.get("file")
        if isinstance(read, dict) and isinstance(read.get("content"), str):
            return str(read["content"])  # a file read: what `cat` prints
        return json.dumps(response, ensure_ascii=False)  # a page fetched, a search's hits
    return str(response or "")


def _patch(kind: str, path: str, old: str = "", new: str = "") -> str:
    if kind == "add":
        body = "".join(f"+{line}\n" for line in new.splitlines())
        return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n"
    minus = "".join(f"-{line}\n" for line in old.splitlines())
    plus = "".join(f"+{line}\n" for line in new.splitlines())
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{minus}{plus}*** End Patch\n"


def _relative(path: str, cwd: str) -> str:
    """A path as Codex's model writes it in a command or patch: from the session's folder."""
    prefix = cwd.rstrip("/") + "/"
    return path[len(prefix) :] if cwd and path.startswith(prefix) else path


def codex_tool(payload: dict[str, Any]) -> dict[str, Any] | None:
    """A tool event as Codex CLI's PostToolUse (None: Codex has no such tool)."""
    tool = payload.get("tool_name")
    tin = payload.get("tool_input") or {}
    path = _relative(
        str(tin.get("file_path") or tin.get("path") or ""), str(payload.get("cwd") or "")
    )
    if tool == "Bash":
        command = str(tin.get("command") or "")
    elif tool == "Read":
        command = f"cat {path}"
    elif tool == "Grep":
        command = f"rg -n {json.dumps(str(tin.get('pattern') or ''))} {path}".strip()
    elif tool == "Glob":
        command = f"rg --files -g {json.dumps(str(tin.get('pattern') or ''))}"
    elif tool in ("Edit", "Write"):
        text = (
            _patch("add", path, new=str(tin.get("content") or ""))
            if tool == "Write"
            else _patch(
                "update", path, str(tin.get("old_string") or ""), str(tin.get("new_string") or "")
            )
        )
        return {
            "tool_name": "apply_patch",
            "tool_input": {"command": text},
            "tool_response": f"Exit code: 0\nOutput:\nSuccess. Updated the following files:\nM {path}\n",
        }
    else:
        return None
    return {
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": _output(payload),
    }


def gemini_tool(payload: dict[str, Any]) -> dict[str, Any] | None:
    """A tool event as Gemini CLI's AfterTool (None: Gemini CLI has no such tool)."""
    tool = payload.get("tool_name")
    tin = dict(payload.get("tool_input") or {})
    failed = payload["hook_event_name"] == "PostToolUseFailure"
    out = _output(payload)
    if tool == "Bash":
        text = f"Output: {out or '(empty)'}\n" + (
            f"Exit Code: {_exit_code(payload)}\n" if failed else ""
        )
        response = {"llmContent": text + "Process Group PGID: 4242", "returnDisplay": out}
        args = {"command": tin.get("command"), "description": tin.get("description") or ""}
        return {"tool_name": "run_shell_command", "tool_input": args, "tool_response": response}
    names = {
        "Read": "read_file",
        "Edit": "replace",
        "Write": "write_file",
        "Grep": "grep_search",
        "Glob": "glob",
        "WebFetch": "web_fetch",
    }
    if tool not in names:
        return None
    response: dict[str, Any] = {"llmContent": out, "returnDisplay": out}
    if failed:
        response["error"] = {"message": out, "type": "execution_failed"}
    return {"tool_name": names[str(tool)], "tool_input": tin, "tool_response": response}


def codex_rollout(transcript: Path, call_id: str, code: int) -> None:
    """The line Codex writes to its rollout file when a command ends (where the hook reads the
    exit code its payload lacks)."""
    item = {"type": "CommandExecution", "id": call_id, "exit_code": code}
    line = {"type": "event_msg", "payload": {"type": "item_completed", "item": item}}
    with transcript.open("a") as handle:
        handle.write(json.dumps(line) + "\n")


def gemini_chat(transcript: Path) -> Path:
    """The chat file Gemini CLI keeps for the session (its hooks' `transcript_path`): where
    the hook counts what was recorded before it (hooks/cairn_hook_gemini.py)."""
    chat = transcript.with_name(transcript.stem + ".gemini.jsonl")
    if not chat.exists():
        meta = {"sessionId": transcript.stem, "startTime": "2026-01-01T00:00:00.000Z"}
        chat.write_text(json.dumps(meta, separators=(",", ":")) + "\n")
    return chat


def recorded(agent: str, shaped: dict[str, Any]) -> None:
    """What Gemini CLI appends to its chat file once the hook has run: the prompt (after
    BeforeAgent), the tool call (after AfterTool)."""
    if agent != "gemini":
        return
    chat = Path(str(shaped["transcript_path"]))
    n = len(chat.read_text().splitlines())
    if shaped["hook_event_name"] == "BeforeAgent":
        record: dict[str, Any] = {"type": "user", "content": [{"text": shaped["prompt"]}]}
    elif shaped["hook_event_name"] == "AfterTool":
        call = {"id": f"call{n}", "name": shaped["tool_name"], "args": shaped["tool_input"]}
        record = {"type": "gemini", "content": "", "toolCalls": [call]}
    else:
        return
    with chat.open("a") as handle:
        handle.write(json.dumps({"id": f"m{n}", **record}, separators=(",", ":")) + "\n")


def as_agent(agent: str, payload: dict[str, Any], transcript: Path) -> dict[str, Any] | None:
    """`payload` (Claude Code's shape) as `agent` sends it; None when it sends no such event."""
    if agent == "claude-code":
        return payload
    event = payload["hook_event_name"]
    native = NATIVE[agent].get(event, event)
    out = {
        k: v
        for k, v in payload.items()
        if k not in ("tool_name", "tool_input", "tool_response", "error")
    }
    out["hook_event_name"] = native
    if event in ("PostToolUse", "PostToolUseFailure"):
        shaped = codex_tool(payload) if agent == "codex" else gemini_tool(payload)
        if shaped is None:
            return None
        out.update(shaped)
        if agent == "codex" and shaped["tool_name"] == "Bash":
            codex_rollout(transcript, str(payload.get("tool_use_id")), _exit_code(payload))
    if agent == "gemini":  # Gemini CLI names neither: its hook counts its chat file instead
        out.pop("tool_use_id", None)
        out.pop("prompt_id", None)
        out["transcript_path"] = str(gemini_chat(transcript))
    if event == "Stop" and agent == "gemini":
        out["prompt_response"] = out.pop("last_assistant_message", "")
    elif event in ("PreCompact", "PostCompact") and agent == "gemini":
        return None  # Cairn does not register Gemini's PreCompress (fired every turn)
    return out
