"""Cairn's entry in an MCP client's `mcpServers` object (Claude Code, Cursor, Windsurf, Cline)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from worker.installer.jsonfile import InstallError
from worker.launch import module_argv

SERVER_NAME = "cairn"
ContainerPath = tuple[str, ...]


def server_entry(
    python: str, env: Mapping[str, str] | None = None, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Launch `cairn mcp` through the interpreter Cairn is installed in (no PATH lookup), with
    `-P` so a `worker/` package in the client's working directory (the project) is never run."""
    argv = module_argv("worker", "mcp", python=python)
    entry: dict[str, Any] = {"command": argv[0], "args": argv[1:]}
    if env:
        entry["env"] = dict(env)
    entry.update(extra or {})
    return entry


def portable_entry() -> dict[str, Any]:
    """For config files inside a project (committed, shared): `cairn mcp` found on PATH."""
    return {"command": "cairn", "args": ["mcp"]}


def is_cairn_entry(entry: object) -> bool:
    """Ours: launches `... worker mcp` (with or without `-P`) or a `cairn mcp` executable."""
    if not isinstance(entry, dict):
        return False
    command = entry.get("command")
    args = entry.get("args")
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    if args[-1:] != ["mcp"]:
        return False
    return args[-2:-1] == ["worker"] or Path(command).name == "cairn"


def _servers(data: Mapping[str, Any], where: object) -> dict[str, Any] | None:
    servers = data.get("mcpServers")
    if servers is None:
        return None
    if not isinstance(servers, dict):
        raise InstallError(
            f"{where}: 'mcpServers' is a {type(servers).__name__}, expected an object"
        )
    return servers


def empty_containers(data: Mapping[str, Any]) -> set[ContainerPath]:
    servers = data.get("mcpServers")
    return {("mcpServers",)} if isinstance(servers, dict) and not servers else set()


def merge_server(
    data: Mapping[str, Any],
    entry: Mapping[str, Any],
    where: object = "config",
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A copy of `data` with mcpServers.cairn = entry; fields the client keeps on our entry
    (Cline's alwaysAllow, disabled ...) stay, `defaults` only fill the ones missing."""
    result = copy.deepcopy(dict(data))
    servers = _servers(result, where)
    if servers is None:
        servers = result["mcpServers"] = {}
    current = servers.get(SERVER_NAME)
    if current is not None and not is_cairn_entry(current):
        raise InstallError(
            f"{where}: an MCP server named '{SERVER_NAME}' already exists and is not Cairn's; "
            "rename or remove it, then run the command again"
        )
    merged = dict(current) if isinstance(current, dict) else {}
    merged.update(copy.deepcopy(dict(entry)))
    for key, value in (defaults or {}).items():
        merged.setdefault(key, copy.deepcopy(value))
    if "env" not in entry:
        merged.pop("env", None)
    servers[SERVER_NAME] = merged
    return result


def unmerge_server(
    data: Mapping[str, Any], keep_empty: Iterable[ContainerPath] = (), where: object = "config"
) -> dict[str, Any]:
    result = copy.deepcopy(dict(data))
    servers = _servers(result, where)
    if servers is None or not is_cairn_entry(servers.get(SERVER_NAME)):
        return result
    del servers[SERVER_NAME]
    if not servers and ("mcpServers",) not in set(keep_empty):
        del result["mcpServers"]
    return result


def registered_entry(data: Mapping[str, Any]) -> dict[str, Any] | None:
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    return entry if is_cairn_entry(entry) else None
