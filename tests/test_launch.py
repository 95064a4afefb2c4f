"""worker.launch: the argv and environment of every child that runs Cairn's own modules, and the
MCP entry built from them (old entries, without `-P`, still count as Cairn's)."""

from __future__ import annotations

import os
import sys

from worker.installer.mcp_config import is_cairn_entry, merge_server, server_entry, unmerge_server
from worker.launch import child_env, module_argv


def test_module_argv_keeps_the_current_folder_off_sys_path() -> None:
    assert module_argv("worker", "mcp") == [sys.executable, "-P", "-m", "worker", "mcp"]
    assert module_argv("x.y", python="/opt/py")[:3] == ["/opt/py", "-P", "-m"]


def test_child_env_drops_pythonpath_entries_that_name_the_current_folder() -> None:
    base = {"PATH": "/bin", "PYTHONPATH": os.pathsep.join(["", "/opt/lib", "src", "."])}
    assert child_env(base, CAIRN_HOME="/h") == {
        "PATH": "/bin",
        "PYTHONPATH": "/opt/lib",
        "CAIRN_HOME": "/h",
    }
    assert "PYTHONPATH" not in child_env({"PYTHONPATH": os.pathsep})
    assert base["PYTHONPATH"].startswith(os.pathsep)  # the caller's mapping is left alone


def test_the_mcp_entry_runs_with_a_safe_path_and_replaces_an_older_one() -> None:
    entry = server_entry("/opt/py/bin/python", {"CAIRN_HOME": "/h"})
    assert entry == {
        "command": "/opt/py/bin/python",
        "args": ["-P", "-m", "worker", "mcp"],
        "env": {"CAIRN_HOME": "/h"},
    }
    older = {"command": "/opt/py/bin/python", "args": ["-m", "worker", "mcp"], "disabled": False}
    assert is_cairn_entry(entry) and is_cairn_entry(older)
    config = {"mcpServers": {"cairn": older, "other": {"command": "x", "args": []}}}
    merged = merge_server(config, entry)
    assert merged["mcpServers"]["cairn"]["args"] == ["-P", "-m", "worker", "mcp"]
    assert merged["mcpServers"]["cairn"]["disabled"] is False  # the client's own field stays
    assert "cairn" not in unmerge_server(config)["mcpServers"]
    assert "cairn" not in unmerge_server(merged)["mcpServers"]
