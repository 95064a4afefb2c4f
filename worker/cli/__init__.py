"""The `cairn` CLI: each command group lives in its own module and registers its subcommands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from worker import __version__
from worker.errors import ConfigError

# Command group modules, in the order `cairn --help` lists them.
MODULES = (
    "lifecycle",
    "install",
    "mcp",
    "doctor",
    "dashboard",
    "portability",
    "memory",
    "memories",
    "retrieval",
    "team",
)
# Which module registers each command, so `cairn status` imports lifecycle alone and not the
# installer, doctor and the rest (tests/test_cli_imports.py checks it against the modules).
COMMAND_MODULES = {
    **dict.fromkeys(("start", "status", "stop", "token"), "lifecycle"),
    **dict.fromkeys(("hook", "install", "uninstall"), "install"),
    "mcp": "mcp",
    "doctor": "doctor",
    "open": "dashboard",
    **dict.fromkeys(("backup", "export", "import", "report"), "portability"),
    **dict.fromkeys(("compress", "decay"), "memory"),
    "memory": "memories",
    **dict.fromkeys(("reindex", "search"), "retrieval"),
    "team": "team",
}


# `cairn import FILE` imports an export (portability); `cairn import <source>` history (imports).
IMPORT_SOURCES = ("claude-code", "codex", "gemini", "claude-mem", "kiro-memory")


def group_of(words: Sequence[str]) -> str | None:
    """The command group module for a command line, when it names a known command."""
    if len(words) > 1 and words[0] == "import" and words[1] in IMPORT_SOURCES:
        return "imports"
    return COMMAND_MODULES.get(words[0]) if words else None


def build_parser(command: str | None = None, group: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI, or only the group that registers `command` when it is a known one."""
    parser = argparse.ArgumentParser(
        prog="cairn", description="Cairn: local-first long-term memory for AI coding agents."
    )
    parser.add_argument("--version", action="version", version=f"cairn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    group = group or COMMAND_MODULES.get(command or "")
    for name in (group,) if group else MODULES:
        importlib.import_module(f"worker.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words else None, group_of(words))
    args = parser.parse_args(words)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"cairn: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
