"""Claude Code transcripts as the hook events Claude Code would have fired for them.

A transcript (`~/.claude/projects/<slug>/<session>.jsonl`) holds the user's prompts, the
assistant's messages with their `tool_use` blocks, and the `tool_result`s (with the structured
`toolUseResult` a PostToolUse hook receives as `tool_response`). Each becomes the payload the
live hook would have read on stdin, so the hooks' own code turns it into Cairn requests
(worker/imports/hook_builder.py). A subagent's transcript (`<session>/subagents/agent-*.jsonl`,
or `agent-*.jsonl` beside the sessions in older versions) belongs to its parent session, as the
hooks see it: same session id, with the agent's id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from worker.imports.transcript import (
    NO_SESSION,
    UNKNOWN_BLOCK,
    UNKNOWN_TYPE,
    Line,
    Skips,
)

# Line types that carry nothing the hooks record (bookkeeping of the CLI itself).
IGNORED_TYPES = frozenset(
    {
        "system",
        "summary",
        "queue-operation",
        "last-prompt",
        "file-history-snapshot",
        "progress",
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "atis-latch",
        "tools-used",
        "cost-state",
        "custom-title",
        "ai-title",
        "tag",
        "agent-name",
        "permission-mode",
        "pr-link",
        "worktree-state",
        "mode",
    }
)
USER_BLOCKS = frozenset({"text", "tool_result", "image", "document"})
ASSISTANT_BLOCKS = frozenset(
    {
        "text",
        "tool_use",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "code_execution_tool_result",
        "container_upload",
    }
)
# Prompts the CLI writes for itself, never typed (the hooks never see them as prompts).
SYNTHETIC_PROMPTS = ("<local-command-", "<command-name>", "Caveat: The messages below")


@dataclass
class HookEvent:
    """One hook invocation rebuilt from a transcript."""

    name: str  # SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure, Stop
    payload: dict[str, Any]
    at_ms: int
    path: str  # the transcript it comes from
    end: int  # where the line that completes it ends (incremental imports start past it)
    key: str = ""  # the transcript line's uuid (names a Stop)


@dataclass
class SessionFiles:
    """A session's transcript and its subagents' transcripts."""

    session_id: str
    project_dir: Path
    main: Path | None = None
    agents: list[Path] = field(default_factory=list)

    def paths(self) -> list[Path]:
        return ([self.main] if self.main else []) + self.agents


def projects_dir(env: dict[str, str] | None = None) -> Path:
    """Where Claude Code keeps transcripts ($CLAUDE_CONFIG_DIR/projects or ~/.claude/projects)."""
    env = dict(os.environ) if env is None else env
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return Path(base) / "projects"


def _first_session_id(path: Path) -> str | None:
    """The `sessionId` of an old-layout subagent transcript (from its first lines)."""
    try:
        with open(path, "rb") as handle:
            for _ in range(20):
                raw = handle.readline(1 << 20)
                if not raw:
                    return None
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                sid = record.get("sessionId") if isinstance(record, dict) else None
                if isinstance(sid, str) and sid:
                    return sid
    except OSError:
        return None
    return None


def discover(root: Path) -> list[SessionFiles]:
    """Every session under `root` (one folder per project), with its subagent transcripts."""
    sessions: dict[tuple[Path, str], SessionFiles] = {}
    try:
        project_dirs = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    for folder in project_dirs:

        def entry(sid: str, folder: Path = folder) -> SessionFiles:
            return sessions.setdefault((folder, sid), SessionFiles(sid, folder))

        try:
            files = sorted(folder.glob("*.jsonl"))
        except OSError:
            continue
        for path in files:
            if path.name.startswith("agent-"):
                parent = _first_session_id(path)
                if parent:
                    entry(parent).agents.append(path)
            else:
                entry(path.stem).main = path
        for path in sorted(folder.glob("*/subagents/agent-*.jsonl")):
            entry(path.parent.parent.name).agents.append(path)
    return [s for s in sessions.values() if s.main is not None or s.agents]


def _kind(item: dict[str, Any]) -> str:
    """A line's or block's `type` ('' when it is not a string)."""
    value = item.get("type")
    return value if isinstance(value, str) else ""


def time_ms(value: object) -> int | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return None
    return int(stamp.timestamp() * 1000)


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def agent_meta(path: Path) -> dict[str, Any]:
    """A subagent transcript's `.meta.json` (agentType ...), or {}."""
    try:
        value = json.loads(path.with_suffix(".meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class _Pending:
    name: str
    input: Any


class TranscriptEvents:
    """Turns one transcript's lines into hook events, in order."""

    def __init__(self, path: Path, skips: Skips, *, agent: bool = False) -> None:
        self.path = str(path)
        self.skips = skips
        self.agent = agent
        self.agent_type = ""
        if agent:
            kind = agent_meta(path).get("agentType")
            self.agent_type = kind if isinstance(kind, str) else ""
        self.tools: dict[str, _Pending] = {}
        self.cwd = ""
        self.session_id = ""
        self.started = False
        self.stop: HookEvent | None = None
        # The prompt of the turn under way: the assistant's lines carry no promptId, and the
        # turn's answer is named by its prompt, as the live Stop hook names it.
        self.prompt_id = ""

    def base(self, record: dict[str, Any]) -> dict[str, Any]:
        payload: dict[str, Any] = {"session_id": self.session_id, "cwd": self.cwd}
        if self.agent:
            agent_id = record.get("agentId")
            if isinstance(agent_id, str) and agent_id:
                payload["agent_id"] = agent_id
            if self.agent_type:
                payload["agent_type"] = self.agent_type
        prompt_id = record.get("promptId")
        if isinstance(prompt_id, str) and prompt_id:
            payload["prompt_id"] = self.prompt_id = prompt_id
        return payload

    def events(self, lines: Iterable[Line]) -> Iterator[HookEvent]:
        for line in lines:
            record = line.record
            kind = _kind(record)
            if kind not in ("user", "assistant", "attachment"):
                if kind not in IGNORED_TYPES:
                    self.skips.add(UNKNOWN_TYPE)
                continue
            sid = record.get("sessionId")
            if not isinstance(sid, str) or not sid:
                if kind != "attachment":
                    self.skips.add(NO_SESSION)
                continue
            self.session_id = sid
            cwd = record.get("cwd")
            if isinstance(cwd, str) and cwd:
                self.cwd = cwd
            at = time_ms(record.get("timestamp"))
            if at is None:
                continue
            if not self.started and self.cwd and not self.agent:
                self.started = True
                yield HookEvent(
                    "SessionStart",
                    {"session_id": sid, "cwd": self.cwd, "source": "startup"},
                    at,
                    self.path,
                    line.end,
                )
            if kind == "assistant":
                self._assistant(record, line, at)
                continue
            if self.stop is not None:
                yield self.stop  # the turn ended before this line
                self.stop = None
            if kind == "attachment":
                yield from self._attachment(record, line, at)
            else:
                yield from self._user(record, line, at)
        if self.stop is not None:
            yield self.stop
            self.stop = None

    def unpaired(self) -> int:
        return len(self.tools)

    def _assistant(self, record: dict[str, Any], line: Line, at: int) -> None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return
        text = []
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = _kind(block)
            if btype not in ASSISTANT_BLOCKS:
                self.skips.add(UNKNOWN_BLOCK)
            elif btype == "tool_use":
                tid, name = block.get("id"), block.get("name")
                if isinstance(tid, str) and tid and isinstance(name, str) and name:
                    self.tools[tid] = _Pending(name, block.get("input"))
            elif btype == "text" and isinstance(block.get("text"), str):
                text.append(block["text"])
        assert isinstance(message, dict)
        if self.agent or message.get("stop_reason") != "end_turn":
            return
        payload = self.base(record)
        if self.prompt_id:
            payload.setdefault("prompt_id", self.prompt_id)
        if text:
            payload["last_assistant_message"] = "\n".join(text)
        uuid = record.get("uuid")
        self.stop = HookEvent("Stop", payload, at, self.path, line.end, str(uuid or line.start))

    def _attachment(self, record: dict[str, Any], line: Line, at: int) -> Iterator[HookEvent]:
        attachment = record.get("attachment")
        if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
            return
        prompt = attachment.get("prompt")
        if isinstance(prompt, str) and prompt.strip():
            payload = self.base(record) | {"prompt": prompt}
            yield HookEvent("UserPromptSubmit", payload, at, self.path, line.end)

    def _user(self, record: dict[str, Any], line: Line, at: int) -> Iterator[HookEvent]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = content
        else:
            return
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        for block in blocks:
            if isinstance(block, dict) and _kind(block) not in USER_BLOCKS:
                self.skips.add(UNKNOWN_BLOCK)
        for block in results:
            tid = block.get("tool_use_id")
            pending = self.tools.pop(tid, None) if isinstance(tid, str) else None
            if pending is None:
                continue
            payload = self.base(record)
            payload.update(tool_name=pending.name, tool_input=pending.input, tool_use_id=tid)
            name = "PostToolUse"
            if block.get("is_error") is True:
                name = "PostToolUseFailure"
                payload["error"] = _text_of(block.get("content"))
            else:
                response = record.get("toolUseResult") if len(results) == 1 else None
                payload["tool_response"] = (
                    response if response is not None else block.get("content")
                )
            yield HookEvent(name, payload, at, self.path, line.end)
        if results or self.agent or record.get("isMeta") or record.get("isCompactSummary"):
            return
        text = _text_of(blocks).strip()
        if not text or text.startswith(SYNTHETIC_PROMPTS):
            return
        payload = self.base(record) | {"prompt": text}
        yield HookEvent("UserPromptSubmit", payload, at, self.path, line.end)
