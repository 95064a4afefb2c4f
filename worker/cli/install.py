"""install | uninstall: register Cairn's hooks, MCP server and editor rules; remove only ours."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from functools import partial
from pathlib import Path
from typing import Any

from worker.agents import AGENTS, NAMES
from worker.hook_command import run_hook
from worker.installer import agent_hooks, claude_settings
from worker.installer import plan as installer
from worker.installer.editors import (
    EDITORS,
    USER_RULES_IN_SETTINGS,
    claude_mcp_target,
    cline_settings_candidates,
    editor_targets,
)
from worker.installer.jsonfile import InstallError, TextFile, parse_object, read_text, real_path
from worker.installer.mcp_config import portable_entry, server_entry
from worker.installer.state import file_records, read_state, state_path, write_state
from worker.paths import data_dir, hook_script
from worker.settings import Settings, load_settings


def interpreter() -> str:
    """The interpreter running this CLI, as an absolute path (a venv's symlink is kept)."""
    return os.path.abspath(sys.executable)


def home_env(settings: Settings) -> dict[str, str]:
    """CAIRN_HOME for hook and MCP processes when it is not the default (~/.cairn)."""
    default = Path.home() / ".cairn"
    return {} if settings.home == default else {"CAIRN_HOME": str(settings.home)}


def claude_settings_path(project: Path | None, local: bool = False) -> Path:
    if project is None:
        return Path.home() / ".claude" / "settings.json"
    return project / ".claude" / ("settings.local.json" if local else "settings.json")


def rules_text_path() -> Path:
    return data_dir("install") / "rules" / "cairn-rules.md"


def rules_body() -> str:
    return rules_text_path().read_text(encoding="utf-8")


def _short(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home) :] if text.startswith(home + os.sep) else text


def chosen_agents(args: argparse.Namespace) -> list[str]:
    """The agents to install hooks for: --agent (repeatable, `all`), else Claude Code and, asked
    on a terminal, the other agents found on this machine."""
    named = list(dict.fromkeys(getattr(args, "agent", None) or []))
    if "all" in named:
        return list(AGENTS)
    if named:
        return named
    found = agent_hooks.detected(Path.home(), shutil.which)
    if not found or args.no_hooks:
        return ["claude-code"]
    names = ", ".join(NAMES[a] for a in found)
    if args.yes or (_interactive() and _ask(f"Also give {names} Cairn's memory? [y/N] ")):
        return ["claude-code", *found]
    print(f"found {names} too: `cairn install --agent all` gives them the same memory")
    return ["claude-code"]


def _agent_command(agent: str, shared: bool, python: str, script: Path, env: dict[str, str]) -> Any:
    def command(arg: str) -> str:
        full = arg if agent == "claude-code" else f"{arg} --agent {agent}"
        if shared:
            return claude_settings.portable_command(full)
        return claude_settings.hook_command(python, script, full, env=env)

    return command


def plan_install(args: argparse.Namespace, settings: Settings) -> list[installer.FileChange]:
    """The changes `cairn install` makes. Files inside the project are committed and shared, so
    they get commands found on PATH (`cairn hook`, `cairn mcp`); only the user's own files and the
    project's settings.local.json name this machine's interpreter and hook script."""
    project = Path.cwd() if args.project or args.local else None
    python = interpreter()
    env = home_env(settings)
    changes: list[installer.FileChange] = []
    agents = args.agents if hasattr(args, "agents") else ["claude-code"]
    if not args.no_hooks:
        script = hook_script().resolve()
        if not script.is_file():
            raise InstallError(
                f"the hook script {script} is missing from this Cairn install; reinstall Cairn"
            )
        if "claude-code" in agents:
            hooks_file = claude_settings_path(project, args.local)
            shared = project is not None and not args.local
            command = (
                claude_settings.portable_command
                if shared
                else partial(claude_settings.hook_command, python, script, env=env)
            )
            changes.append(installer.install_hooks(hooks_file, command))
        for agent in agents:
            if agent == "claude-code":
                continue
            path = agent_hooks.hooks_file(agent, Path.home(), project)
            command = _agent_command(agent, project is not None, python, script, env)
            change = installer.install_agent_hooks(agent, path, command)
            changes.append(change)
            if agent == "codex":
                changes.append(_codex_trust(change, settings))

    def entry_for(path: Path) -> dict[str, Any]:
        inside = project is not None and path.is_relative_to(project)
        return portable_entry() if inside else server_entry(python, env)

    if args.mcp:
        target = claude_mcp_target(Path.home(), project)
        changes.append(installer.install_mcp(target, entry_for(target.path)))
    body = rules_body()
    for editor in dict.fromkeys(args.editor or []):
        targets, rules = editor_targets(editor, Path.home(), project)
        changes.extend(installer.install_mcp(t, entry_for(t.path)) for t in targets)
        if rules is not None:
            changes.append(installer.install_rules(rules, body))
    return changes


def _codex_files(settings: Settings) -> list[Path]:
    """Codex CLI hooks files Cairn wrote (recorded), and the user's."""
    records = file_records(read_state(settings.home))
    paths = [Path(k) for k, r in records.items() if r.get("kind") == "codex-hooks"]
    paths.append(agent_hooks.hooks_file("codex", Path.home(), None))
    return list(dict.fromkeys(real_path(p) for p in paths))


def _codex_trust(
    change: installer.FileChange | None, settings: Settings, dropped: set[Path] | None = None
) -> installer.FileChange:
    """Codex CLI's config.toml trusting Cairn's handlers in every Codex hooks file of Cairn's:
    `change`'s new content for its file, the others as they are (`dropped`: as uninstall leaves
    them)."""
    blocks: list[str] = []
    for path in dict.fromkeys(_codex_files(settings) + ([change.path] if change else [])):
        if change is not None and path == change.path:
            text = change.new
        else:
            try:
                text = read_text(path).text
            except InstallError:
                continue
        if text is None or (dropped is not None and path in dropped):
            continue
        try:
            data = parse_object(TextFile(path, text))
        except InstallError:
            continue
        if claude_settings.registered_commands(data):
            block = agent_hooks.codex_trust_block(path, data)
            if block not in blocks:
                blocks.append(block)
    config = agent_hooks.codex_home(Path.home()) / "config.toml"
    return installer.set_codex_trust(config, "\n\n".join(blocks) if blocks else None)


def _say_where_rules_are_not(args: argparse.Namespace) -> None:
    """User-wide rules for an editor that keeps them in its settings, not in a file."""
    if args.project or args.local:
        return
    for editor in dict.fromkeys(args.editor or []):
        where = USER_RULES_IN_SETTINGS.get(editor)
        if where is not None:
            name = editor.capitalize()
            print(
                f"{name} keeps user-wide rules in {where}, not in a file: no rules file written "
                f"(nothing in the current folder either). Paste {rules_text_path()} there, or run "
                f"`cairn install --project --editor {editor}` in a project for its own rules file."
            )


def hooks_elsewhere(target: Path, state: dict[str, Any]) -> list[Path]:
    """Other Claude Code settings files with Cairn's hooks that run alongside `target`'s."""
    candidates = claude_settings.settings_files(Path.home(), Path.cwd())
    candidates += [
        Path(k) for k, r in file_records(state).items() if r.get("kind") == "claude-hooks"
    ]
    found: list[Path] = []
    seen = {real_path(target)}
    for path in candidates:
        real = real_path(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            data = parse_object(read_text(real))
        except InstallError:
            continue
        if claude_settings.registered_commands(data):
            found.append(path)
    return found


def _warn_hook_levels(args: argparse.Namespace, state: dict[str, Any]) -> None:
    project = Path.cwd() if args.project or args.local else None
    target = claude_settings_path(project, args.local)
    others = hooks_elsewhere(target, state)
    if others:
        print(
            f"cairn: warning: Cairn's hooks are also registered in {', '.join(map(_short, others))}; "
            f"where that applies together with {_short(target)} every hook runs twice. Keep one "
            "level: `cairn uninstall --project` in a project removes its hooks, `cairn uninstall` the "
            "user's (and every install it recorded).",
            file=sys.stderr,
        )
    if project is not None and not args.local and shutil.which("cairn") is None:
        print(
            f"cairn: warning: {_short(target)} runs `cairn hook`, but `cairn` is not on PATH here: "
            f"add {_short(Path(sys.executable).parent)} to PATH (or install Cairn with pipx) so "
            "the hooks run on this machine.",
            file=sys.stderr,
        )


def plan_uninstall(args: argparse.Namespace, settings: Settings) -> list[installer.FileChange]:
    project = Path.cwd() if args.project else None
    home = Path.home()
    candidates: dict[Path, installer.Kind] = {}
    root = project if project is not None else home
    candidates[root / ".claude" / "settings.json"] = "claude-hooks"
    candidates[root / ".claude" / "settings.local.json"] = "claude-hooks"
    candidates[claude_mcp_target(home, project).path] = "mcp"
    if project is None:
        candidates[home / ".cursor" / "mcp.json"] = "mcp"
        candidates[home / ".codeium" / "windsurf" / "mcp_config.json"] = "mcp"
        for path in cline_settings_candidates(home):
            candidates[path] = "mcp"
    else:
        candidates[project / ".cursor" / "mcp.json"] = "mcp"
    for editor in EDITORS:
        _, rules = editor_targets(editor, home, project)
        if rules is not None:
            candidates[rules.path] = "rules-file"
    for agent, agent_kind in installer.AGENT_KINDS.items():
        candidates[agent_hooks.hooks_file(agent, home, project)] = agent_kind
    records = file_records(read_state(settings.home))
    for key, record in records.items():
        path = Path(key)
        if project is not None and not path.is_relative_to(project):
            continue
        kind = record.get("kind")
        if kind in installer.KINDS:
            candidates[path] = kind
    changes: list[installer.FileChange] = []
    seen: set[Path] = set()
    for path, kind in candidates.items():
        real = real_path(path)
        if real in seen:
            continue
        seen.add(real)
        if kind.startswith("rules") and not path.exists():
            continue
        if kind == "codex-trust":
            continue  # below, once the hooks files are planned
        change = installer.uninstall_file(path, kind, records.get(str(real)))
        if change is not None:
            changes.append(change)
    # Codex's trust goes with Cairn's handlers: kept for the Codex hooks files still holding them.
    dropped = {c.path for c in changes if c.kind == "codex-hooks" and c.changed}
    trust = _codex_trust(None, settings, dropped)
    if trust.changed or trust.old is not None:
        changes.append(trust)
    return changes


def _report(changes: list[installer.FileChange], dry_run: bool) -> None:
    for change in changes:
        if dry_run:
            if change.changed:
                print(f"would {change.verb()} {_short(change.path)} ({change.label})")
                sys.stdout.write(change.diff())
            else:
                print(f"unchanged {_short(change.path)} ({change.label}): already up to date")


def _print_applied(done: list[installer.Applied]) -> None:
    for item in done:
        change = item.change
        line = f"{change.verb():9} {_short(change.path)} ({change.label})"
        if item.backup is not None:
            line += f"  backup: {_short(item.backup)}"
        print(line)


def _start_worker(settings: Settings) -> int:
    from worker.runtime import read_runtime
    from worker.spawn import StartFailed, start_worker

    info = read_runtime(settings)
    if info is not None:
        print(f"worker already running: pid {info['pid']}, http://127.0.0.1:{info['port']}")
        return 0
    try:
        info = start_worker(settings, timeout=20)
    except StartFailed as exc:
        print(f"cairn: {exc}\nrun `cairn doctor` to check the install", file=sys.stderr)
        return 1
    print(f"worker started: pid {info['pid']}, http://127.0.0.1:{info['port']}")
    return 0


def _ask(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _interactive() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # closed
        return False


def offer_import(args: argparse.Namespace, settings: Settings, worker_up: bool) -> int:
    """After the hooks are in: the Claude Code history not imported yet, and an offer to import it
    (asked on a terminal; `--yes` imports without asking; otherwise how to do it later)."""
    from worker.imports.census import count_history
    from worker.imports.claude_code import projects_dir
    from worker.imports.state import ImportState

    project = Path.cwd() if args.project or args.local else None
    state = ImportState.load(settings.home / "imports" / "claude-code.json")
    history = count_history(projects_dir(), state, project)
    if history.sessions == 0:
        return 0
    later = "cairn import claude-code" + (
        f" --project {shlex.quote(str(project))}" if project else ""
    )
    if not worker_up:
        print(f"{history.line()}; import them any time with `{later}`")
        return 0
    if args.yes:
        print(f"{history.line()}; importing them (--yes)")
    else:
        if not _interactive():
            print(f"{history.line()}; import them any time with `{later}` (or install with --yes)")
            return 0
        if not _ask(f"{history.line()}; import now? [y/N] "):
            print(f"not imported; run `{later}` any time")
            return 0
    from worker.cli.imports import run_import, summary
    from worker.client import ApiError, WorkerDown

    try:
        totals = run_import(settings, project=str(project) if project else None)
    except (WorkerDown, ApiError) as exc:
        print(f"cairn: the import stopped: {exc}; run `{later}` to go on", file=sys.stderr)
        return 1
    print(summary(totals, dry_run=False))
    return 0


def cmd_install(args: argparse.Namespace) -> int:
    settings = load_settings()
    args.agents = chosen_agents(args)
    try:
        changes = plan_install(args, settings)
    except InstallError as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    state = read_state(settings.home)
    if not args.no_hooks:
        _warn_hook_levels(args, state)
    if args.dry_run:
        _report(changes, dry_run=True)
        _say_where_rules_are_not(args)
        print("dry run: nothing was written")
        return 0
    try:
        done = installer.apply_install(changes, state)
    except OSError as exc:
        print(f"cairn: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    state["python"] = interpreter()
    state["hook"] = str(hook_script().resolve())
    from worker import __version__

    state["version"] = __version__
    write_state(settings.home, state)
    _print_applied(done)
    print(f"recorded interpreter in {_short(state_path(settings.home))}")
    if not args.no_hooks:
        names = ", ".join(NAMES[a] for a in args.agents)
        print(f"{names} pick up the hooks in new sessions (restart running ones).")
    if args.mcp and not args.project:
        entry = server_entry(interpreter(), home_env(settings))
        print(
            "Claude Code rewrites ~/.claude.json while it runs: if `/mcp` does not list cairn, "
            "quit Claude Code and run this again, or register it with Claude Code's own CLI:\n"
            "  claude mcp add --scope user cairn -- "
            + " ".join(shlex.quote(str(part)) for part in [entry["command"], *entry["args"]])
        )
    _say_where_rules_are_not(args)
    if args.editor:
        print("Restart the editor (or reload its MCP servers) to connect to Cairn.")
    started = 1 if args.no_start else _start_worker(settings)
    if not args.no_hooks and "claude-code" in args.agents:
        imported = offer_import(args, settings, worker_up=started == 0)
        if imported != 0:
            return imported
    return 0 if args.no_start else started


def cmd_uninstall(args: argparse.Namespace) -> int:
    settings = load_settings()
    try:
        changes = plan_uninstall(args, settings)
    except InstallError as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    if args.dry_run:
        _report([c for c in changes if c.changed], dry_run=True)
        if not any(c.changed for c in changes):
            print("nothing to remove: no Cairn entries found")
        print("dry run: nothing was written")
        return 0
    state = read_state(settings.home)
    try:
        done = installer.apply_uninstall(changes, state)
    except OSError as exc:
        print(f"cairn: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    if state_path(settings.home).exists():
        write_state(settings.home, state)
    changed = [d for d in done if d.change.changed]
    _print_applied(changed)
    if not changed:
        print("nothing to remove: no Cairn entries found")
    print(
        f"Your memory data stays in {_short(settings.home)}; "
        "stop the worker with `cairn stop`, delete that folder to erase it."
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "install",
        help="register Cairn's hooks with Claude Code (and its MCP server with editors)",
        description="Merge Cairn's hooks into ~/.claude/settings.json (or ./.claude/settings.json "
        "with --project), keeping everything else; back up, write atomically, start the worker.",
    )
    p.add_argument("--project", action="store_true", help="this project's files, not the user's")
    p.add_argument(
        "--local",
        action="store_true",
        help="hooks in ./.claude/settings.local.json (not committed) instead of settings.json",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="show the changes as diffs, write nothing"
    )
    p.add_argument("--mcp", action="store_true", help="also register `cairn mcp` with Claude Code")
    p.add_argument(
        "--editor",
        action="append",
        choices=EDITORS,
        help="write this editor's MCP config and a rules file (repeatable)",
    )
    p.add_argument(
        "--agent",
        action="append",
        choices=(*AGENTS, "all"),
        help="the coding agent to give Cairn's hooks (repeatable; `all`); default: Claude Code, "
        "and the other agents found here when you say so on a terminal (or --yes)",
    )
    p.add_argument("--no-hooks", action="store_true", help="skip the agents' hooks")
    p.add_argument(
        "--no-start",
        action="store_true",
        help="do not start the worker (and so do not import the history)",
    )
    p.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="import the Claude Code history found without asking (otherwise asked on a "
        "terminal only)",
    )
    p.set_defaults(func=cmd_install)

    p = sub.add_parser(
        "uninstall",
        help="remove Cairn's hooks, MCP entries and rules (your data is kept)",
        description="Remove only Cairn's entries from Claude Code and editor config files.",
    )
    p.add_argument("--project", action="store_true", help="this project's files, not the user's")
    p.add_argument(
        "--dry-run", action="store_true", help="show the changes as diffs, write nothing"
    )
    p.set_defaults(func=cmd_uninstall)

    # Reached through worker/__main__.py without building this parser; here for --help.
    p = sub.add_parser(
        "hook",
        help="run Cairn's Claude Code hook for EVENT (the hook's JSON on stdin; always exits 0)",
        description="What `cairn install --project` registers: works on any machine with Cairn "
        "on PATH.",
    )
    p.add_argument("event", help="session-start, user-prompt-submit, post-tool-use, stop, ...")
    p.set_defaults(func=lambda a: run_hook([a.event]))
