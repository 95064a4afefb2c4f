"""The `cairn` CLI: each command group lives in its own module and registers its subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from worker import __version__
from worker.cli import dashboard, doctor, install, lifecycle, mcp
from worker.cli import memory as memory_cli
from worker.cli import portability as portability_cli
from worker.cli import retrieval as retrieval_cli
from worker.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cairn", description="Cairn: local-first long-term memory for AI coding agents."
    )
    parser.add_argument("--version", action="version", version=f"cairn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (
        lifecycle,
        install,
        mcp,
        doctor,
        dashboard,
        portability_cli,
        memory_cli,
        retrieval_cli,
    ):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"cairn: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
