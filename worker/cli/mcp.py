"""mcp: run Cairn's MCP server on stdin/stdout (for Claude Code, Cursor, Windsurf, Cline)."""

from __future__ import annotations

import argparse

from worker.settings import load_settings


def cmd_mcp(args: argparse.Namespace) -> int:
    from worker.mcp_server import run  # the MCP SDK is only imported by this command

    return run(load_settings())


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp",
        help="run the MCP server on stdio (clients start this; see `cairn install --mcp`)",
        description="A stdio MCP server with tools search, timeline, get_observations, "
        "save_memory, update_memory, forget, get_context, resume_session and report. It talks "
        "to the worker over HTTP and starts it when it is down.",
    )
    p.set_defaults(func=cmd_mcp)
