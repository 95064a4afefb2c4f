"""Every way Cairn gets launched runs Cairn's own code, even from a repository that has its own
`worker/` package (whose import would write a marker file): the SessionStart hook's auto-start,
`cairn start`/`open`/`install`, the MCP command the installer registers (and its auto-start of the
worker) and the plugin's MCP launcher. Workers started here are stopped by the PID they record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.e2e.hook_runner import (
    HANG_GUARD,
    base,
    hook_env,
    run_hook,
    stop_spawned_worker,
    wait_for,
)
from tests.e2e.worker_process import WorkerProcess, free_port
from tests.hostile import MARKER, hostile_project

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CAIRN = Path(sys.executable).with_name("cairn")  # the console script, as a user runs it
PLUGIN = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    hostile_project(root)
    (root / ".git").mkdir()
    return root


def marker_of(repo: Path) -> str:
    """What the repository's own `worker` package recorded ("" when it never ran)."""
    path = repo / MARKER
    return path.read_text() if path.exists() else ""


def cairn_env(home: Path, found_by: str) -> dict[str, str]:
    """The environment of a launcher that finds Cairn through `found_by`: the interpreter
    `cairn install` recorded, or (no install.json, no `cairn` on PATH) the one at hand."""
    env = hook_env(home, CAIRN_PORT=str(free_port()))
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if found_by == "install.json":
        (home / "install.json").write_text(json.dumps({"python": sys.executable}))
    else:
        folders = env.get("PATH", "").split(os.pathsep)
        env["PATH"] = os.pathsep.join(p for p in folders if not (Path(p) / "cairn").exists())
    return env


def cairn_up(home: Path) -> WorkerProcess | None:
    """The worker recorded in `home`, if it answers /health."""
    try:
        info = json.loads((home / "worker.json").read_text())
        handle = WorkerProcess(home=home, port=int(info["port"]))
        return handle if handle.request("GET", "/health", timeout=2)[0] == 200 else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def mcp_call(params: StdioServerParameters, errlog: Path, tool: str | None = None) -> Any:
    """Initialize an MCP session over stdio; the tool list, or `tool`'s result when named."""

    async def main() -> Any:
        with anyio.fail_after(HANG_GUARD), open(errlog, "w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                if tool is None:
                    return await session.list_tools()
                return await session.call_tool(tool, {})

    return anyio.run(main)


def run_cli(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=HANG_GUARD * 2
    )


@pytest.mark.parametrize("found_by", ["install.json", "checkout"])
def test_session_start_in_a_repo_with_its_own_worker_package_starts_cairn(
    found_by: str, isolated_home: Path, repo: Path
) -> None:
    env = cairn_env(isolated_home, found_by)
    start = {**base("sess-hostile", repo, "SessionStart"), "source": "startup"}
    try:
        result = run_hook("session-start", start, env, cwd=repo)
        assert result.returncode == 0 and result.stderr == ""
        worker = wait_for(lambda: marker_of(repo) or cairn_up(isolated_home))
        assert marker_of(repo) == ""
        assert isinstance(worker, WorkerProcess)

        def registered() -> bool:  # directly, or from the spool once the worker is up
            worker.request("POST", "/api/spool/replay", {})
            return worker.request("GET", "/api/sessions/sess-hostile")[0] == 200

        wait_for(registered)
    finally:
        stop_spawned_worker(isolated_home)
    assert marker_of(repo) == ""


@pytest.mark.parametrize(
    "args",
    [["start"], ["open", "--no-browser"], ["install", "--no-hooks"]],
    ids=["start", "open", "install"],
)
def test_cli_commands_start_cairn_from_a_repo_with_its_own_worker_package(
    args: list[str], isolated_home: Path, repo: Path
) -> None:
    assert CAIRN.is_file(), f"{CAIRN} is missing: install Cairn in this venv (make run)"
    env = cairn_env(isolated_home, "checkout")
    try:
        done = run_cli([str(CAIRN), *args], env, repo)
        assert marker_of(repo) == ""
        assert done.returncode == 0, done.stderr
        assert cairn_up(isolated_home) is not None
    finally:
        stop_spawned_worker(isolated_home)


def test_the_mcp_command_the_installer_writes_runs_cairn_in_a_repo_with_its_own_worker_package(
    isolated_home: Path, user_home: Path, repo: Path
) -> None:
    """The entry `cairn install --mcp` writes, started as Claude Code starts it (cwd = the
    project), answers as Cairn and starts the worker as Cairn when a tool needs it."""
    env = cairn_env(isolated_home, "checkout")
    done = run_cli([str(CAIRN), "install", "--no-hooks", "--no-start", "--mcp"], env, repo)
    assert done.returncode == 0, done.stderr
    entry = json.loads((user_home / ".claude.json").read_text())["mcpServers"]["cairn"]
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={**env, **entry.get("env", {})},
        cwd=str(repo),
    )
    try:
        result = mcp_call(params, isolated_home.parent / "mcp-stderr.log", "timeline")
        assert marker_of(repo) == ""
        assert not result.is_error, result.content
        assert cairn_up(isolated_home) is not None
    finally:
        stop_spawned_worker(isolated_home)
    assert marker_of(repo) == ""


@pytest.mark.parametrize("found_by", ["install.json", "this interpreter", "empty PYTHONPATH entry"])
def test_the_plugin_mcp_launcher_runs_cairn_in_a_repo_with_its_own_worker_package(
    found_by: str, isolated_home: Path, repo: Path
) -> None:
    """plugin.json runs `python3 install/mcp_launcher.py` in the project folder (the last case:
    a PYTHONPATH with an empty entry, which Python reads as the current folder)."""
    env = cairn_env(isolated_home, found_by)
    if found_by == "empty PYTHONPATH entry":
        env["PYTHONPATH"] = os.pathsep
    server = PLUGIN["mcpServers"]["cairn"]
    args = [a.replace("${CLAUDE_PLUGIN_ROOT}", str(ROOT)) for a in server["args"]]
    assert server["command"] == "python3"  # played here by this venv's interpreter
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(repo))
    tools = mcp_call(params, isolated_home.parent / "mcp-stderr.log").tools
    assert marker_of(repo) == ""
    assert "search" in {tool.name for tool in tools}
