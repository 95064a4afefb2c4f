"""Install and uninstall as a list of file changes: previewed as diffs, then applied safely."""

from __future__ import annotations

import contextlib
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from worker.agents import NAMES
from worker.installer import agent_hooks, claude_settings, jsonedit, mcp_config, textblock
from worker.installer.editors import McpTarget, RulesTarget
from worker.installer.jsonfile import (
    TextFile,
    atomic_write,
    backup,
    parse_object,
    read_text,
    real_path,
    render_like,
    unified_diff,
)
from worker.installer.state import file_records

_EMPTY_OBJECT = re.compile(r"\s*(\{\s*\})?\s*")
Kind = Literal[
    "claude-hooks",
    "mcp",
    "rules-file",
    "rules-block",
    "codex-hooks",
    "gemini-hooks",
    "copilot-hooks",
    "cursor-hooks",
    "codex-trust",
]
KINDS: tuple[Kind, ...] = typing.get_args(Kind)
AGENT_KINDS: dict[str, Kind] = {
    "codex": "codex-hooks",
    "gemini": "gemini-hooks",
    "copilot": "copilot-hooks",
    "cursor": "cursor-hooks",
}
ContainerPath = tuple[str, ...]


@dataclass
class FileChange:
    path: Path
    kind: Kind
    label: str
    old: str | None
    new: str | None  # None: delete the file
    keep_empty: set[ContainerPath] = field(default_factory=set)

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        return unified_diff(self.path, self.old, self.new)

    def verb(self) -> str:
        if not self.changed:
            return "unchanged"
        if self.old is None:
            return "create"
        return "delete" if self.new is None else "update"


def _load(path: Path) -> tuple[Path, TextFile, dict[str, Any]]:
    target = real_path(path)
    file = read_text(target)
    return target, file, parse_object(file)


def _json_change(
    path: Path,
    kind: Kind,
    label: str,
    file: TextFile,
    data: dict[str, Any],
    new_data: dict[str, Any],
    keep_empty: set[ContainerPath] | None = None,
) -> FileChange:
    if new_data == data:
        new_text = file.text
    elif file.text is None or not file.text.strip():
        new_text = render_like(new_data, file.text)
    else:  # only what changed is rewritten: the rest keeps its bytes (compact arrays too)
        new_text = jsonedit.edit(file.text, new_data)
    return FileChange(path, kind, label, file.text, new_text, set(keep_empty or ()))


# ---------------------------------------------------------------------------------------- install
def install_hooks(settings_file: Path, command: Callable[[str], str]) -> FileChange:
    """Cairn's hook groups in `settings_file`; `command(event_arg)` is each handler's command."""
    path, file, data = _load(settings_file)
    groups = claude_settings.desired_groups(command)
    new_data = claude_settings.merge_hooks(data, groups, where=path)
    keep = claude_settings.empty_containers(data)
    return _json_change(path, "claude-hooks", "Claude Code hooks", file, data, new_data, keep)


def merged_agent_hooks(
    agent: str, path: Path, command: Callable[[str], str]
) -> tuple[TextFile, dict[str, Any], dict[str, Any]]:
    """`path`'s file, its content, and its content with Cairn's hooks for `agent` merged in."""
    spec = agent_hooks.SPECS[agent]
    target, file, data = _load(path)
    if spec.shape == "groups":
        groups = claude_settings.desired_groups(command, spec.events, spec.timeout_scale)
        return file, data, claude_settings.merge_hooks(data, groups, where=target)
    wanted = agent_hooks.desired_flat(spec, command)
    return file, data, agent_hooks.merge_flat(data, wanted, where=target)


def install_agent_hooks(agent: str, path: Path, command: Callable[[str], str]) -> FileChange:
    """Cairn's hooks for another agent (worker/installer/agent_hooks.py) in `path`."""
    file, data, new_data = merged_agent_hooks(agent, path, command)
    spec = agent_hooks.SPECS[agent]
    keep = (
        claude_settings.empty_containers(data)
        if spec.shape == "groups"
        else agent_hooks.empty_flat_containers(data)
    )
    label = f"{NAMES[agent]} hooks"
    return _json_change(real_path(path), AGENT_KINDS[agent], label, file, data, new_data, keep)


def set_codex_trust(config: Path, block: str | None) -> FileChange:
    """Codex CLI's config.toml with Cairn's trust block set to `block` (None: taken out)."""
    path = real_path(config)
    file = read_text(path)
    if block is None:
        new = textblock.remove_block(file.text, "#") if file.text is not None else None
    else:
        new = textblock.set_block(file.text, block, "#")
    return FileChange(path, "codex-trust", "Codex CLI hook trust", file.text, new)


def install_mcp(target: McpTarget, entry: Mapping[str, Any]) -> FileChange:
    path, file, data = _load(target.path)
    new_data = mcp_config.merge_server(data, entry, where=path, defaults=target.extra)
    keep = mcp_config.empty_containers(data)
    return _json_change(path, "mcp", f"{target.client} MCP server", file, data, new_data, keep)


def install_rules(target: RulesTarget, body: str) -> FileChange:
    path = real_path(target.path)
    file = read_text(path)
    if target.mode == "block":
        new = textblock.set_block(file.text, body)
        return FileChange(path, "rules-block", f"{target.client} rules", file.text, new)
    new = f"{target.header}{textblock.MANAGED}\n\n{body.strip()}\n"
    if file.exists and not textblock.is_managed(file.text):
        # A file of the same name the user wrote: keep theirs, add our block to it.
        new = textblock.set_block(file.text, body)
        return FileChange(path, "rules-block", f"{target.client} rules", file.text, new)
    return FileChange(path, "rules-file", f"{target.client} rules", file.text, new)


# -------------------------------------------------------------------------------------- uninstall
def uninstall_file(path: Path, kind: Kind, record: Mapping[str, Any] | None) -> FileChange | None:
    """The change that removes Cairn from one file (None when the file is absent)."""
    record = record or {}
    target = real_path(path)
    file = read_text(target)
    if file.text is None:
        return None
    keep = {tuple(p) for p in record.get("keep_empty", []) if isinstance(p, list)}
    if kind == "codex-trust":
        return FileChange(
            target, kind, "Codex CLI hook trust", file.text, textblock.remove_block(file.text, "#")
        )
    if kind in ("claude-hooks", "mcp", *AGENT_KINDS.values()):
        data = parse_object(file)
        agent = next((a for a, k in AGENT_KINDS.items() if k == kind), None)
        if kind == "claude-hooks":
            new_data = claude_settings.unmerge_hooks(data, keep, where=target)
            label = "Claude Code hooks"
        elif agent is not None:
            if agent_hooks.SPECS[agent].shape == "groups":
                new_data = claude_settings.unmerge_hooks(data, keep, where=target)
            else:
                new_data = agent_hooks.unmerge_flat(data, keep, where=target)
            label = f"{NAMES[agent]} hooks"
        else:
            new_data = mcp_config.unmerge_server(data, keep, where=target)
            label = "MCP server"
        change = _json_change(target, kind, label, file, data, new_data)
        if change.changed and not new_data:
            if record.get("created"):
                change.new = None
            elif isinstance(record.get("blank"), str):
                change.new = record["blank"]
        return change
    if textblock.is_managed(file.text):
        return FileChange(target, "rules-file", "rules", file.text, None)
    return FileChange(target, "rules-block", "rules", file.text, textblock.remove_block(file.text))


# ------------------------------------------------------------------------------------------ apply
@dataclass
class Applied:
    change: FileChange
    backup: Path | None


def _missing_parents(path: Path) -> list[Path]:
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    return missing


def apply_install(changes: Iterable[FileChange], state: dict[str, Any]) -> list[Applied]:
    """Write each changed file (backup first) and record what was created in `state`."""
    records = file_records(state)
    done: list[Applied] = []
    for change in changes:
        key = str(change.path)
        record = dict(records.get(key) or {})
        record["kind"] = change.kind
        if change.changed:
            if change.old is None:
                record["created"] = True
                record["created_dirs"] = [str(p) for p in _missing_parents(change.path)]
            elif _EMPTY_OBJECT.fullmatch(change.old) and "created" not in record:
                # What to give back when uninstall leaves no key: this very text (`{ }`, "").
                record["blank"] = change.old
            if change.keep_empty and "keep_empty" not in record:
                record["keep_empty"] = sorted(list(p) for p in change.keep_empty)
        records[key] = record
        if not change.changed:
            done.append(Applied(change, None))
            continue
        saved = backup(change.path) if change.old is not None else None
        assert change.new is not None
        atomic_write(change.path, change.new)
        done.append(Applied(change, saved))
    return done


def apply_uninstall(changes: Iterable[FileChange], state: dict[str, Any]) -> list[Applied]:
    """Write or delete each changed file; folders install created go too when left empty."""
    records = file_records(state)
    done: list[Applied] = []
    created_dirs: set[Path] = set()
    for change in changes:
        record = records.pop(str(change.path), None) or {}
        blank = change.new is not None and not change.new.strip()
        ours_only = change.kind in ("rules-block", "codex-trust")
        if change.changed and blank and record.get("created") and ours_only:
            change.new = None  # a file that only ever held our block
        if not change.changed:
            done.append(Applied(change, None))
            continue
        if change.new is None:
            # Only Cairn's content was left in it: nothing of the user's to back up.
            change.path.unlink()
            created_dirs.update(Path(p) for p in record.get("created_dirs", []))
            done.append(Applied(change, None))
            continue
        saved = backup(change.path) if change.old is not None else None
        atomic_write(change.path, change.new)
        done.append(Applied(change, saved))
    for folder in sorted(created_dirs, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty
    return done
