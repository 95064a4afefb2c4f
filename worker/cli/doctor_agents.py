"""doctor's check of the other agents' hooks (Codex CLI, Gemini CLI, Copilot CLI, Cursor).

It answers in doctor's terms (status, detail, fix) without importing doctor (which calls it):
`command_problems` is doctor's reader of a hook command line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from worker.agents import NAMES
from worker.installer import agent_hooks, textblock
from worker.installer.claude_settings import registered_commands
from worker.installer.jsonfile import InstallError, parse_object, read_text


def _registered(agent: str, data: dict[str, object]) -> dict[str, list[str]]:
    if agent_hooks.SPECS[agent].shape == "groups":
        return registered_commands(data)
    # Flat lists: wrap each handler as a group so the one reader serves both shapes.
    hooks = data.get("hooks")
    grouped = {
        event: [{"hooks": handlers}]
        for event, handlers in (hooks.items() if isinstance(hooks, dict) else [])
        if isinstance(handlers, list)
    }
    return registered_commands({"hooks": grouped})


def _codex_untrusted(path: Path, data: dict[str, object]) -> bool:
    """Codex CLI silently skips a hook it was not told to trust: are ours all trusted?"""
    config = read_text(agent_hooks.codex_home(Path.home()) / "config.toml").text or ""
    wanted = agent_hooks.codex_trust_block(path, data).splitlines()[1:]  # the tables
    return not textblock.has_block(config, "#") or any(line not in config for line in wanted)


def agents_check(
    project: Path, command_problems: Callable[[str], list[str]]
) -> tuple[str, str, str]:
    """(status, detail, fix) for the other agents' hooks of the user and of `project`."""
    found: list[str] = []
    problems: list[str] = []
    for agent in agent_hooks.OTHER_AGENTS:
        name = NAMES[agent]
        for level in (None, project):
            path = agent_hooks.hooks_file(agent, Path.home(), level)
            try:
                data = parse_object(read_text(path))
            except InstallError as exc:
                problems.append(f"{name}: {exc}")
                continue
            commands = _registered(agent, data)
            if not commands:
                continue
            found.append(f"{name} ({len(commands)} events, {path})")
            wanted = {e.name for e in agent_hooks.SPECS[agent].events}
            missing = sorted(wanted - set(commands))
            if missing:
                problems.append(f"{name}: not registered for {', '.join(missing)}")
            problems += sorted(
                {
                    f"{name}: {p}"
                    for lines in commands.values()
                    for c in lines
                    for p in command_problems(c)
                }
            )
            if agent == "codex" and _codex_untrusted(path, data):
                problems.append(f"{name}: hooks in {path} are not trusted, so Codex skips them")
    if problems:
        return "fail", "; ".join(problems), "cairn install --agent NAME"
    if not found:
        return "ok", "no other agent has Cairn's hooks (cairn install --agent all)", ""
    return "ok", "; ".join(found), ""
