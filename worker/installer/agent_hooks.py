"""Cairn's hooks for the other coding agents: where each keeps them and in what shape.

Checked against the real CLIs (docs/agents.md): Codex CLI 0.169 reads `~/.codex/hooks.json`
(or `<project>/.codex/hooks.json`) in Claude Code's shape, and runs a hook only once the user
trusted it: a `[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash` table in
`~/.codex/config.toml`, which install writes in a marked block (codex_trust). Gemini CLI 0.61:
the `hooks` key of `~/.gemini/settings.json` (or the project's `.gemini/settings.json`), Claude
Code's shape with timeouts in milliseconds. Copilot CLI 1.0: a file of ours in
`~/.copilot/hooks/` (or the repository's `.github/hooks/`), flat handlers under Claude Code's
event names, which makes it send Claude Code's snake_case fields. Cursor: `~/.cursor/hooks.json`
(or the project's `.cursor/hooks.json`), flat handlers under its own event names; its CLI does
not run offline, so those are written from its documentation and unit-tested only.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from worker.agents import AGENTS
from worker.installer.claude_settings import HookEvent, hooks_object, is_cairn_handler

OTHER_AGENTS = AGENTS[1:]
Shape = Literal["groups", "flat"]


@dataclass(frozen=True)
class AgentSpec:
    name: str
    shape: Shape  # "groups": Claude Code's {matcher, hooks: [...]}; "flat": [handler, ...]
    events: tuple[HookEvent, ...]
    timeout_scale: int = 1  # Gemini CLI: milliseconds
    command_key: str = "command"
    timeout_key: str = "timeout"


SPECS: dict[str, AgentSpec] = {
    "codex": AgentSpec(
        "codex",
        "groups",
        (
            HookEvent("SessionStart", "session-start", None, 15),
            HookEvent("UserPromptSubmit", "user-prompt-submit", None, 10),
            HookEvent("PostToolUse", "post-tool-use", "*", 5),
            HookEvent("Stop", "stop", None, 10),
            HookEvent("PreCompact", "pre-compact", None, 10),
            HookEvent("PostCompact", "post-compact", None, 10),
            HookEvent("SessionEnd", "session-end", None, 3),  # Codex caps SessionEnd at 3 s
        ),
    ),
    "gemini": AgentSpec(
        "gemini",
        "groups",
        (
            HookEvent("SessionStart", "session-start", None, 15),
            HookEvent("BeforeAgent", "user-prompt-submit", None, 10),
            HookEvent("AfterTool", "post-tool-use", "*", 5),
            HookEvent("AfterAgent", "stop", None, 10),
            HookEvent("SessionEnd", "session-end", None, 5),
        ),
        timeout_scale=1000,
    ),
    "copilot": AgentSpec(
        "copilot",
        "flat",
        (
            HookEvent("SessionStart", "session-start", None, 15),
            HookEvent("UserPromptSubmit", "user-prompt-submit", None, 10),
            HookEvent("PostToolUse", "post-tool-use", None, 5),
            HookEvent("PostToolUseFailure", "post-tool-use-failure", None, 5),
            HookEvent("Stop", "stop", None, 10),
            HookEvent("PreCompact", "pre-compact", None, 10),
            HookEvent("SessionEnd", "session-end", None, 5),
        ),
        command_key="bash",
        timeout_key="timeoutSec",
    ),
    "cursor": AgentSpec(
        "cursor",
        "flat",
        (
            HookEvent("sessionStart", "session-start", None, 15),
            HookEvent("beforeSubmitPrompt", "user-prompt-submit", None, 10),
            HookEvent("postToolUse", "post-tool-use", None, 5),
            HookEvent("postToolUseFailure", "post-tool-use-failure", None, 5),
            HookEvent("afterAgentResponse", "stop", None, 10),
            HookEvent("preCompact", "pre-compact", None, 10),
            HookEvent("sessionEnd", "session-end", None, 5),
        ),
    ),
}


def codex_home(home: Path) -> Path:
    value = os.environ.get("CODEX_HOME")
    return Path(value).expanduser() if value else home / ".codex"


def copilot_home(home: Path) -> Path:
    value = os.environ.get("COPILOT_HOME")
    return Path(value).expanduser() if value else home / ".copilot"


def hooks_file(agent: str, home: Path, project: Path | None) -> Path:
    """The file Cairn's hooks for `agent` go into (user level, or `project`'s)."""
    if agent == "codex":
        return (project / ".codex" if project else codex_home(home)) / "hooks.json"
    if agent == "gemini":
        return (project if project else home) / ".gemini" / "settings.json"
    if agent == "copilot":
        folder = project / ".github" / "hooks" if project else copilot_home(home) / "hooks"
        return folder / "cairn.json"
    if agent == "cursor":
        return (project if project else home) / ".cursor" / "hooks.json"
    raise ValueError(f"unknown agent {agent!r} (choose from {', '.join(OTHER_AGENTS)})")


def detected(home: Path, which: Callable[[str], str | None]) -> list[str]:
    """The other agents this machine has: their folder in `home`, or their command on PATH."""
    found = []
    checks = {
        "codex": (codex_home(home), "codex"),
        "gemini": (home / ".gemini", "gemini"),
        "copilot": (copilot_home(home), "copilot"),
        "cursor": (home / ".cursor", "cursor-agent"),
    }
    for agent, (folder, command) in checks.items():
        if folder.is_dir() or which(command):
            found.append(agent)
    return found


# --------------------------------------------------------------------------- flat handler lists
def desired_flat(spec: AgentSpec, command: Callable[[str], str]) -> dict[str, dict[str, Any]]:
    handlers: dict[str, dict[str, Any]] = {}
    for event in spec.events:
        handler: dict[str, Any] = {"type": "command"} if spec.name == "copilot" else {}
        handler[spec.command_key] = command(event.arg)
        handler[spec.timeout_key] = event.timeout * spec.timeout_scale
        handlers[event.name] = handler
    return handlers


def merge_flat(
    data: Mapping[str, Any], wanted: Mapping[str, dict[str, Any]], where: object = "hooks file"
) -> dict[str, Any]:
    """A copy of `data` with exactly Cairn's handler per event (in place if already there)."""
    result = copy.deepcopy(dict(data))
    hooks = hooks_object(result, where, "a list of handlers")
    if hooks is None:
        result.setdefault("version", 1)
        hooks = result["hooks"] = {}
    for event in list(hooks):
        if event not in wanted:
            kept = [h for h in hooks[event] if not is_cairn_handler(h)]
            if kept != hooks[event]:
                if kept:
                    hooks[event] = kept
                else:
                    del hooks[event]
    for event, handler in wanted.items():
        current = hooks.get(event) or []
        at = next((i for i, h in enumerate(current) if is_cairn_handler(h)), None)
        others = [h for h in current if not is_cairn_handler(h)]
        position = (
            len(others) if at is None else sum(1 for h in current[:at] if not is_cairn_handler(h))
        )
        hooks[event] = [*others[:position], copy.deepcopy(handler), *others[position:]]
    return result


def unmerge_flat(
    data: Mapping[str, Any], keep_empty: Iterable[tuple[str, ...]] = (), where: object = "file"
) -> dict[str, Any]:
    """A copy of `data` without Cairn's handlers; what that empties goes too."""
    keep = set(keep_empty)
    result = copy.deepcopy(dict(data))
    hooks = hooks_object(result, where, "a list of handlers")
    if hooks is None:
        return result
    for event in list(hooks):
        kept = [h for h in hooks[event] if not is_cairn_handler(h)]
        if kept == hooks[event]:
            continue
        if kept or ("hooks", event) in keep:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks and ("hooks",) not in keep and data.get("hooks"):
        del result["hooks"]
        if set(result) == {"version"} and "version" not in {p[0] for p in keep}:
            del result["version"]  # only the version line install wrote is left
    return result


def empty_flat_containers(data: Mapping[str, Any]) -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        if not hooks:
            found.add(("hooks",))
        found.update(("hooks", e) for e, h in hooks.items() if isinstance(h, list) and not h)
    if "version" in data:
        found.add(("version",))
    return found


# --------------------------------------------------------------------------- Codex CLI's trust
# Codex CLI runs a hook from a hooks file only once the user trusted it: `[hooks.state."<file>:
# <event>:<group>:<handler>"] trusted_hash = "sha256:..."` in ~/.codex/config.toml, the hash of
# the handler as Codex normalises it (checked against Codex CLI 0.169.0 in the real-CLI tests:
# tests/e2e/test_codex_cli.py runs it without any bypass).
_MATCHER_EVENTS = {
    "permission_request",
    "post_compact",
    "post_tool_use",
    "pre_compact",
    "pre_tool_use",
    "session_start",
    "subagent_start",
    "subagent_stop",
}
_CAPPED_AT_3S = {"session_end", "interrupt"}


def _snake(event: str) -> str:
    return "".join(
        ("_" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(event)
    )


def codex_trusted_hash(event: str, matcher: object, handler: Mapping[str, Any]) -> str:
    import hashlib
    import json

    name = _snake(event)
    timeout = handler.get("timeout", 600)
    timeout = max(1, int(timeout)) if isinstance(timeout, int) else 600
    if name in _CAPPED_AT_3S:
        timeout = min(timeout, 3)
    normal: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": timeout,
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": name, "hooks": [normal]}
    if name in _MATCHER_EVENTS and matcher is not None:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def codex_trust_block(hooks_path: Path, data: Mapping[str, Any]) -> str:
    """The config.toml tables that trust Cairn's handlers in `data` (the hooks file's content
    after install), one per handler, keyed by its place in the file."""
    lines: list[str] = [
        f"# Codex CLI runs Cairn's hooks in {hooks_path} (trusted by cairn install)"
    ]
    hooks = data.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if not is_cairn_handler(handler):
                    continue
                key = f"{hooks_path}:{_snake(event)}:{g}:{h}"
                digest = codex_trusted_hash(event, group.get("matcher"), handler)
                quoted = key.replace("\\", "\\\\").replace('"', '\\"')
                lines += [f'[hooks.state."{quoted}"]', f'trusted_hash = "{digest}"']
    return "\n".join(lines)
