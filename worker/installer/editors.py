"""Where each MCP client keeps its server list and its rules, per scope (user or project).

Sources (checked late 2026): Claude Code keeps user-scope MCP servers in the top-level
`mcpServers` of ~/.claude.json (what `claude mcp add --scope user` writes) and project-scope ones in
<project>/.mcp.json. Cursor: ~/.cursor/mcp.json or <project>/.cursor/mcp.json; project rules as
.cursor/rules/*.mdc; user-wide rules only in Cursor Settings > Rules > User Rules (no file, so a
user-wide install writes none and says so). Windsurf: only a global
~/.codeium/windsurf/mcp_config.json; global rules in ~/.codeium/windsurf/memories/global_rules.md,
workspace rules in .windsurf/rules/*.md. Cline (VS Code extension saoudrizwan.claude-dev):
<VS Code user dir>/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json, and
~/.cline/data/settings/cline_mcp_settings.json for the newer CLI/shared config; global rules in
~/Documents/Cline/Rules (or ~/Cline/Rules), workspace rules in .clinerules/.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

EDITORS = ("cursor", "windsurf", "cline")
# Editors without a file for user-wide rules: where they keep them instead.
USER_RULES_IN_SETTINGS = {"cursor": "Cursor Settings > Rules > User Rules"}
CLINE_EXTENSION = "saoudrizwan.claude-dev"
# VS Code and its forks that can host the Cline extension.
VSCODE_FLAVOURS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")


@dataclass(frozen=True)
class McpTarget:
    path: Path
    client: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RulesTarget:
    path: Path
    client: str
    mode: Literal["file", "block"]  # a file we own, or a marked block in the user's file
    header: str = ""  # front matter the client reads (owned files only)


def claude_mcp_target(home: Path, project: Path | None) -> McpTarget:
    if project is not None:
        return McpTarget(project / ".mcp.json", "Claude Code (project)", {"type": "stdio"})
    return McpTarget(home / ".claude.json", "Claude Code", {"type": "stdio"})


def _vscode_user_dirs(home: Path, platform: str) -> list[Path]:
    if platform == "darwin":
        base = home / "Library" / "Application Support"
    elif platform.startswith("win"):
        base = home / "AppData" / "Roaming"
    else:
        base = home / ".config"
    return [base / flavour / "User" for flavour in VSCODE_FLAVOURS]


def cline_settings_candidates(home: Path, platform: str = sys.platform) -> list[Path]:
    tail = Path("globalStorage") / CLINE_EXTENSION / "settings" / "cline_mcp_settings.json"
    paths = [user / tail for user in _vscode_user_dirs(home, platform)]
    paths.append(home / ".cline" / "data" / "settings" / "cline_mcp_settings.json")
    return paths


def cline_mcp_paths(home: Path, platform: str = sys.platform) -> list[Path]:
    """Every Cline settings file whose host is installed; VS Code's when none is."""
    # The extension's (or the CLI's data) folder exists once the host has run Cline.
    found = [p for p in cline_settings_candidates(home, platform) if p.parent.parent.is_dir()]
    return found or [cline_settings_candidates(home, platform)[0]]


def cline_rules_dir(home: Path) -> Path:
    documents = home / "Documents"
    return (documents if documents.is_dir() else home) / "Cline" / "Rules"


def editor_targets(
    editor: str, home: Path, project: Path | None, platform: str = sys.platform
) -> tuple[list[McpTarget], RulesTarget | None]:
    """MCP config files and the rules target for `editor`; `project` None = user scope, which
    writes only under `home` (None: the editor has no user-wide rules file, see
    USER_RULES_IN_SETTINGS)."""
    if editor == "cursor":
        if project is None:
            return [McpTarget(home / ".cursor" / "mcp.json", "Cursor")], None
        header = (
            "---\ndescription: When and how to use the Cairn memory tools (MCP server cairn)\n"
            "alwaysApply: true\n---\n"
        )
        rules = RulesTarget(project / ".cursor" / "rules" / "cairn.mdc", "Cursor", "file", header)
        return [McpTarget(project / ".cursor" / "mcp.json", "Cursor")], rules
    if editor == "windsurf":
        mcp = McpTarget(home / ".codeium" / "windsurf" / "mcp_config.json", "Windsurf")
        if project is not None:
            header = "---\ntrigger: always_on\n---\n"
            path = project / ".windsurf" / "rules" / "cairn.md"
            return [mcp], RulesTarget(path, "Windsurf", "file", header)
        path = home / ".codeium" / "windsurf" / "memories" / "global_rules.md"
        return [mcp], RulesTarget(path, "Windsurf", "block")
    if editor == "cline":
        extra = {"disabled": False, "alwaysAllow": []}
        targets = [McpTarget(p, "Cline", extra) for p in cline_mcp_paths(home, platform)]
        if project is not None:
            clinerules = project / ".clinerules"
            if clinerules.is_file():  # the older single-file form: add a block to it
                return targets, RulesTarget(clinerules, "Cline", "block")
            return targets, RulesTarget(clinerules / "cairn.md", "Cline", "file")
        return targets, RulesTarget(cline_rules_dir(home) / "cairn.md", "Cline", "file")
    raise ValueError(f"unknown editor {editor!r} (choose from {', '.join(EDITORS)})")
