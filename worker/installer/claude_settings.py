"""Cairn's hooks in a Claude Code settings file: merge (idempotent) and unmerge (only ours).

Cairn's handlers are recognised by the hook script's file name (`cairn_hook.py`, machine-specific
commands) or `cairn hook <event>` (the portable commands of shared project files) in their command,
so an install from another checkout, an older version or the other form is replaced rather than
duplicated. Everything else in
the file (other keys, other tools' groups and handlers, their order) is left as it was.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.installer.jsonfile import InstallError

HOOK_MARKER = "cairn_hook.py"
PORTABLE_MARKER = re.compile(r"\bcairn hook [A-Za-z]")
NOT_INSTALLED = (
    "Cairn: this project's Cairn hooks run `cairn hook`, but `cairn` is not on PATH on this "
    "machine. Install Cairn (pipx install cairn, or pip install cairn in a venv on PATH); the "
    "hooks then work as committed (no `cairn install` needed)."
)


@dataclass(frozen=True)
class HookEvent:
    name: str  # Claude Code's event name
    arg: str  # the argument cairn_hook.py takes
    matcher: str | None  # None: the group has no matcher key (events without one)
    timeout: int  # seconds; the hook keeps to a much smaller budget of its own


# Timeouts are a ceiling Claude Code enforces; the hook script answers within its own budget
# (SessionStart may wait up to 3 s for a cold worker before fetching context).
EVENTS: tuple[HookEvent, ...] = (
    HookEvent("SessionStart", "session-start", "startup|resume|clear|compact|fork", 15),
    HookEvent("UserPromptSubmit", "user-prompt-submit", None, 10),
    HookEvent("PostToolUse", "post-tool-use", "*", 5),
    # A tool call that fails (a Bash command exiting non-zero) fires only this event.
    HookEvent("PostToolUseFailure", "post-tool-use-failure", "*", 5),
    HookEvent("Stop", "stop", None, 10),
    HookEvent("SessionEnd", "session-end", None, 5),
    HookEvent("PreCompact", "pre-compact", None, 10),
    # After /compact (2.1.332; older CLIs accept the entry and never fire it): compact_summary.
    HookEvent("PostCompact", "post-compact", None, 10),
)

ContainerPath = tuple[str, ...]


def settings_files(home: Path, project: Path) -> list[Path]:
    """The Claude Code settings files whose hooks run in `project`: user, shared, local."""
    local = project / ".claude"
    files = [home / ".claude" / "settings.json", local / "settings.json"]
    return list(dict.fromkeys([*files, local / "settings.local.json"]))  # project may be home


def hook_command(
    python: str, script: Path | str, arg: str, env: Mapping[str, str] | None = None
) -> str:
    """A shell command line with every path quoted (paths may contain spaces)."""
    parts = [f"{key}={shlex.quote(value)}" for key, value in sorted((env or {}).items())]
    parts += [shlex.quote(python), shlex.quote(str(script)), arg]
    return " ".join(parts)


def portable_command(arg: str) -> str:
    """A command line for a shared (committed) settings file: `cairn` from PATH, no local path.

    Without Cairn on PATH it says so on stderr instead of a bare "command not found": SessionStart
    exits 1 (a non-blocking error Claude Code shows once per session), the other events exit 0
    (no noise on every tool call). Never 2, which would block the agent.
    """
    status = 1 if arg.split(" ", 1)[0] == "session-start" else 0
    return (
        f"command -v cairn >/dev/null 2>&1 && exec cairn hook {arg} || "
        f"{{ echo {shlex.quote(NOT_INSTALLED)} >&2; exit {status}; }}"
    )


def desired_groups(
    command: Callable[[str], str], events: Iterable[HookEvent] = EVENTS, timeout_scale: int = 1
) -> dict[str, dict[str, Any]]:
    """Event name -> the one group Cairn adds for it; `command(arg)` is its command line. Other
    agents with Claude Code's file shape pass their own `events` (Gemini CLI counts timeouts in
    milliseconds: `timeout_scale` 1000)."""
    groups: dict[str, dict[str, Any]] = {}
    for event in events:
        group: dict[str, Any] = {}
        if event.matcher is not None:
            group["matcher"] = event.matcher
        group["hooks"] = [
            {
                "type": "command",
                "command": command(event.arg),
                "timeout": event.timeout * timeout_scale,
            }
        ]
        groups[event.name] = group
    return groups


def handler_command(handler: object) -> str | None:
    """A handler's command line: `command`, or `bash` in Copilot CLI's hook files."""
    if not isinstance(handler, dict):
        return None
    for key in ("command", "bash"):
        if isinstance(handler.get(key), str):
            return str(handler[key])
    return None


def is_cairn_command(command: str) -> bool:
    return HOOK_MARKER in command or PORTABLE_MARKER.search(command) is not None


def is_cairn_handler(handler: object) -> bool:
    command = handler_command(handler)
    return command is not None and is_cairn_command(command)


def is_portable(command: str) -> bool:
    return HOOK_MARKER not in command and PORTABLE_MARKER.search(command) is not None


def hooks_object(
    data: Mapping[str, Any], where: object, items: str = "a list of groups"
) -> dict[str, Any] | None:
    """The file's `hooks` object (None when absent), refused unless each event holds a list
    (`items` names what the list holds, for the message: groups here, handlers in flat files)."""
    hooks = data.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise InstallError(f"{where}: 'hooks' is a {type(hooks).__name__}, expected an object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise InstallError(
                f"{where}: hooks.{event} is a {type(groups).__name__}, expected {items}"
            )
    return hooks


def _is_cairn_group(group: object) -> bool:
    if not isinstance(group, dict):
        return False
    handlers = group.get("hooks")
    return isinstance(handlers, list) and bool(handlers) and all(map(is_cairn_handler, handlers))


def _strip_cairn(groups: list[Any]) -> list[Any]:
    """Groups with Cairn's handlers removed; groups that held only Cairn handlers are dropped."""
    out: list[Any] = []
    for group in groups:
        if _is_cairn_group(group):
            continue
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = [h for h in group["hooks"] if not is_cairn_handler(h)]
            if len(kept) != len(group["hooks"]):
                group = {**group, "hooks": kept}
                if not kept:
                    continue
        out.append(group)
    return out


def empty_containers(data: Mapping[str, Any]) -> set[ContainerPath]:
    """Containers that exist and are empty before a merge: unmerge keeps them."""
    found: set[ContainerPath] = set()
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        if not hooks:
            found.add(("hooks",))
        for event, groups in hooks.items():
            if isinstance(groups, list) and not groups:
                found.add(("hooks", event))
    return found


def merge_hooks(
    data: Mapping[str, Any], groups: Mapping[str, dict[str, Any]], where: object = "settings"
) -> dict[str, Any]:
    """A copy of `data` with exactly Cairn's `groups` registered (in place if already present)."""
    result = copy.deepcopy(dict(data))
    hooks = hooks_object(result, where)
    if hooks is None:
        hooks = result["hooks"] = {}
    for event in list(hooks):
        if event not in groups:
            stripped = _strip_cairn(hooks[event])
            if stripped != hooks[event]:
                hooks[event] = stripped
                if not stripped:
                    del hooks[event]
    for event, wanted in groups.items():
        current = hooks.get(event)
        if current is None:
            hooks[event] = [copy.deepcopy(wanted)]
            continue
        position = next((i for i, g in enumerate(current) if _is_cairn_group(g)), None)
        if position is None:
            hooks[event] = [*_strip_cairn(current), copy.deepcopy(wanted)]
            continue
        before = _strip_cairn(current[:position])
        after = _strip_cairn(current[position + 1 :])
        hooks[event] = [*before, copy.deepcopy(wanted), *after]
    return result


def unmerge_hooks(
    data: Mapping[str, Any], keep_empty: Iterable[ContainerPath] = (), where: object = "settings"
) -> dict[str, Any]:
    """A copy of `data` without Cairn's handlers; containers emptied by that go too."""
    keep = set(keep_empty)
    result = copy.deepcopy(dict(data))
    hooks = hooks_object(result, where)
    if hooks is None:
        return result
    for event in list(hooks):
        stripped = _strip_cairn(hooks[event])
        if stripped == hooks[event]:
            continue
        if stripped or ("hooks", event) in keep:
            hooks[event] = stripped
        else:
            del hooks[event]
    if not hooks and ("hooks",) not in keep and data.get("hooks"):
        del result["hooks"]
    return result


def registered_commands(data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Event name -> Cairn hook command lines found (for doctor)."""
    found: dict[str, list[str]] = {}
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                command = handler_command(handler)
                if command is not None and is_cairn_command(command):
                    found.setdefault(event, []).append(command)
    return found
