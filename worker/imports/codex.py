"""Codex CLI's rollout files as the hook events Codex would have fired (`cairn import codex`).

Codex CLI keeps each session in `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`
(~/.codex by default): one JSON object per line, `{timestamp, type, payload}`. Read here, as
recorded by Codex CLI 0.169.0 (docs/agents.md): `session_meta` (the session id and cwd),
`event_msg` lines whose `item_completed` item is the user's message, a command's execution (its
command line, output and exit code), a file change (the files a patch touched) or the agent's
message, and `task_complete` (the turn's last message). Each becomes the Claude Code-shaped
payload the live hook passes on (hooks/cairn_hook_agents.py), with the same ids: a turn's prompt
is named by its turn id, a tool call by its call id, so a session recorded live and imported
later is stored once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from worker.imports.claude_code import HookEvent, SessionFiles, time_ms
from worker.imports.transcript import NO_SESSION, UNKNOWN_TYPE, Line, Skips

LINE_TYPES = frozenset(
    {
        "session_meta",
        "turn_context",
        "world_state",
        "token_usage_record",
        "response_item",
        "compacted",
    }
)


def sessions_dir(env: dict[str, str] | None = None) -> Path:
    """Where Codex CLI keeps rollouts ($CODEX_HOME/sessions, ~/.codex/sessions)."""
    env = dict(os.environ) if env is None else env
    base = env.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return Path(base) / "sessions"


def discover(root: Path) -> list[SessionFiles]:
    """Every rollout under `root`, one session each (its id is the file name's tail)."""
    try:
        paths = sorted(root.rglob("rollout-*.jsonl"))
    except OSError:
        return []
    return [SessionFiles(p.stem[-36:], p.parent, main=p) for p in paths if p.is_file()]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = (
        [c.get("text") for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    )
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip())


def _command(value: object) -> str:
    """The command line Codex ran (`["/bin/bash", "-lc", "pytest -q"]` is `pytest -q`)."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[-2] in ("-lc", "-c"):
            return str(value[-1])
        return " ".join(value)
    return value if isinstance(value, str) else ""


def _patch(changes: object) -> str:
    """The `*** Begin Patch` headers of a file change (the files are what is recorded)."""
    heads = {"add": "Add", "delete": "Delete"}
    lines = ["*** Begin Patch"]
    for path, change in changes.items() if isinstance(changes, dict) else []:
        kind = change.get("type") if isinstance(change, dict) else None
        lines.append(f"*** {heads.get(str(kind), 'Update')} File: {path}")
    return "\n".join([*lines, "*** End Patch"]) + "\n"


class RolloutEvents:
    """Turns one rollout's lines into hook events, in order."""

    agent = "codex"

    def __init__(self, path: Path, skips: Skips, *, agent: bool = False) -> None:
        self.path = str(path)
        self.skips = skips
        self.session_id = ""
        self.cwd = ""
        self.turn = ""
        self.answer = ""

    def base(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "cwd": self.cwd}

    def events(self, lines: Iterable[Line]) -> Iterator[HookEvent]:
        for line in lines:
            record = line.record
            kind = record.get("type")
            payload = record.get("payload")
            at = time_ms(record.get("timestamp"))
            if not isinstance(payload, dict) or at is None:
                continue
            if kind == "session_meta":
                sid = payload.get("id") or payload.get("session_id")
                cwd = payload.get("cwd")
                if not isinstance(sid, str) or not sid:
                    self.skips.add(NO_SESSION)
                    continue
                self.session_id, self.cwd = sid, cwd if isinstance(cwd, str) else ""
                yield HookEvent(
                    "SessionStart", {**self.base(), "source": "startup"}, at, self.path, line.end
                )
            elif kind == "event_msg" and self.session_id:
                yield from self._event(payload, at, line)
            elif kind not in LINE_TYPES and kind != "event_msg":
                self.skips.add(UNKNOWN_TYPE)

    def _event(self, payload: dict[str, Any], at: int, line: Line) -> Iterator[HookEvent]:
        what = payload.get("type")
        turn = payload.get("turn_id")
        if isinstance(turn, str) and turn:
            self.turn = turn
        if what == "task_complete":
            message = payload.get("last_agent_message")
            message = message if isinstance(message, str) and message.strip() else self.answer
            body = {**self.base(), "stop_hook_active": False, "last_assistant_message": message}
            yield HookEvent("Stop", body, at, self.path, line.end, key=self.turn)
            self.answer = ""
            return
        item = payload.get("item") if what == "item_completed" else None
        if not isinstance(item, dict):
            return
        kind = item.get("type")
        if kind == "UserMessage":
            text = _text(item.get("content"))
            if text.strip():
                prompt = {**self.base(), "prompt": text, "prompt_id": self.turn}
                yield HookEvent("UserPromptSubmit", prompt, at, self.path, line.end)
        elif kind == "AgentMessage":
            self.answer = _text(item.get("content")) or self.answer
        elif kind == "CommandExecution":
            response: dict[str, Any] = {"stdout": str(item.get("aggregated_output") or "")}
            if isinstance(item.get("exit_code"), int):
                response["exit_code"] = item["exit_code"]
            tool = {
                **self.base(),
                "tool_name": "Bash",
                "tool_input": {"command": _command(item.get("command"))},
                "tool_response": response,
                "tool_use_id": str(item.get("id") or ""),
            }
            yield HookEvent("PostToolUse", tool, at, self.path, line.end)
        elif kind == "FileChange":
            tool = {
                **self.base(),
                "tool_name": "apply_patch",
                "tool_input": {"command": _patch(item.get("changes"))},
                "tool_response": str(item.get("stdout") or ""),
                "tool_use_id": str(item.get("id") or ""),
            }
            yield HookEvent("PostToolUse", tool, at, self.path, line.end)

    def unpaired(self) -> int:
        return 0
