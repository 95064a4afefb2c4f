"""`cairn install` for real: a subprocess merges the hooks, records the interpreter and starts the
worker; the registered command line, run by a shell like Claude Code does, reaches that worker;
`cairn doctor` passes; `cairn uninstall` restores the settings file. Plus the plugin layout."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.e2e.worker_process import WorkerProcess, free_port
from worker import __version__
from worker.installer.claude_settings import EVENTS
from worker.paths import data_dir

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SETTINGS = {
    "model": "opus",
    "hooks": {
        "PostToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "true", "timeout": 3}]}
        ]
    },
}


@pytest.fixture
def env(isolated_home: Path, user_home: Path) -> Iterator[dict[str, str]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    base.update(
        {
            "HOME": str(user_home),
            "CAIRN_HOME": str(isolated_home),
            "CAIRN_PORT": str(free_port()),
            "CAIRN_EMBED_ENABLED": "0",
        }
    )
    yield base
    runtime = isolated_home / "worker.json"
    if runtime.exists():  # the worker `cairn install` started for this test
        with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
            os.kill(int(json.loads(runtime.read_text())["pid"]), signal.SIGTERM)


def cairn(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def api(home: Path, path: str) -> Any:
    info = json.loads((home / "worker.json").read_text())
    req = urllib.request.Request(f"http://127.0.0.1:{info['port']}{path}")
    req.add_header("Authorization", "Bearer " + (home / "token").read_text().strip())
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def run_hook(
    command: str, payload: dict[str, Any], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run a registered hook command the way Claude Code does: through a shell, JSON on stdin."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_install_hook_doctor_uninstall(
    env: dict[str, str], user_home: Path, isolated_home: Path, project_cwd: Path
) -> None:
    settings_file = user_home / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    original = json.dumps(SETTINGS, indent=2) + "\n"
    settings_file.write_text(original)

    result = cairn(env, project_cwd, "install")
    assert result.returncode == 0, result.stderr
    assert "worker started" in result.stdout
    assert api(isolated_home, "/health")["ok"] is True
    state = json.loads((isolated_home / "install.json").read_text())
    assert state["python"] == os.path.abspath(sys.executable)

    # The SessionStart command exactly as registered, run with a clean environment (no
    # CAIRN_HOME: the command line carries it), registers the session with the worker.
    data = json.loads(settings_file.read_text())
    command = data["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    hook_env = {k: v for k, v in env.items() if k != "CAIRN_HOME"}
    payload = {
        "session_id": "e2e-install-1",
        "transcript_path": str(project_cwd / "t.jsonl"),
        "cwd": str(project_cwd),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    hook = run_hook(command, payload, hook_env)
    assert hook.returncode == 0, hook.stderr
    session = api(isolated_home, "/api/sessions/e2e-install-1")
    assert session["id"] == "e2e-install-1"

    doctor = cairn(env, project_cwd, "doctor", "--json")
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 0, report
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "worker": "ok",
        "port": "ok",
        "token": "ok",
        "permissions": "ok",
        "hooks": "ok",
        "agents": "ok",
        "interpreter": "ok",
        "mcp": "ok",
        "model": "ok",
        "database": "ok",
        "spool": "ok",
        "recovery": "ok",
        "team": "ok",
    }

    again = cairn(env, project_cwd, "install", "--no-start")
    assert again.returncode == 0 and "unchanged" in again.stdout

    removed = cairn(env, project_cwd, "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert settings_file.read_text() == original
    doctor = cairn(env, project_cwd, "doctor")
    assert doctor.returncode == 1 and "[FAIL] hooks" in doctor.stdout


def test_plugin_manifest_and_hooks_match_the_installer() -> None:
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "cairn" and manifest["version"] == __version__
    assert (
        "hooks" not in manifest
    )  # hooks/hooks.json is found by convention; naming it loads it twice
    hooks = json.loads((data_dir("hooks") / "hooks.json").read_text())["hooks"]
    assert list(hooks) == [e.name for e in EVENTS]
    for event in EVENTS:
        (group,) = hooks[event.name]
        assert group.get("matcher") == event.matcher
        (handler,) = group["hooks"]
        assert handler == {
            "type": "command",
            "command": f'python3 "${{CLAUDE_PLUGIN_ROOT}}/hooks/cairn_hook.py" {event.arg}',
            "timeout": event.timeout,
        }


def test_marketplace_lists_the_plugin_at_the_repo_root() -> None:
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] == "cairn" and market["owner"]["name"]
    (entry,) = market["plugins"]
    root = (REPO / entry["source"]).resolve()
    manifest = json.loads((root / ".claude-plugin" / "plugin.json").read_text())
    assert entry["name"] == manifest["name"] == "cairn"
    assert (root / "hooks" / "hooks.json").is_file()


def assert_tool_call_recorded(
    worker: WorkerProcess, command: str, env: dict[str, str], cwd: Path, name: str
) -> None:
    """A PostToolUse for `pytest tests/test_<name>.py` through `command` reaches the worker."""
    payload = {
        "session_id": f"e2e-{name}",
        "transcript_path": str(cwd / "t.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"pytest -q tests/test_{name}.py"},
        "tool_response": {"stdout": "1 passed", "stderr": "", "exit_code": 0},
        "tool_use_id": f"toolu_{name}",
    }
    result = run_hook(command, payload, env)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    deadline = time.monotonic() + 15
    titles: list[str] = []
    while time.monotonic() < deadline and not titles:
        _status, listing = worker.request("GET", f"/api/observations?session_id=e2e-{name}")
        titles = [o["title"] for o in listing["items"]]
        time.sleep(0.1)
    assert any(f"test_{name}" in t for t in titles), titles


def test_plugin_hook_command_reaches_the_worker(worker: WorkerProcess, tmp_path: Path) -> None:
    hooks = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    command = hooks["PostToolUse"][0]["hooks"][0]["command"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"CLAUDE_PLUGIN_ROOT": str(REPO), "CAIRN_HOME": str(worker.home)})
    assert_tool_call_recorded(worker, command, env, tmp_path, "plugin_marker")


def test_plugin_mcp_launcher_uses_the_recorded_interpreter(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    (worker.home / "install.json").write_text(json.dumps({"python": sys.executable}))
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    server = manifest["mcpServers"]["cairn"]
    args = [a.replace("${CLAUDE_PLUGIN_ROOT}", str(REPO)) for a in server["args"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"CAIRN_HOME": str(worker.home), "PATH": "/usr/bin:/bin"})
    params = StdioServerParameters(command="python3", args=args, env=env, cwd=str(tmp_path))

    async def main() -> set[str]:
        with open(tmp_path / "mcp-stderr.log", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return {t.name for t in (await session.list_tools()).tools}

    assert {"search", "get_observations", "save_memory"} <= anyio.run(main)


def test_project_hook_command_reaches_the_worker(worker: WorkerProcess, project_cwd: Path) -> None:
    """The committed `--project` command, run by a shell with only `cairn` on PATH (as on a
    teammate's machine), records the tool call with the running worker."""
    from worker.cli import main

    assert main(["install", "--no-start", "--project"]) == 0
    data = json.loads((project_cwd / ".claude" / "settings.json").read_text())
    command = data["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"CAIRN_HOME": str(worker.home), "PATH": f"{Path(sys.executable).parent}:/bin"})
    assert_tool_call_recorded(worker, command, env, project_cwd, "project_marker")


def test_install_yes_imports_the_history_and_a_second_install_finds_nothing_new(
    env: dict[str, str], user_home: Path, isolated_home: Path, project_cwd: Path
) -> None:
    from tests.test_installer_import import write_history

    sid = "00000000-0000-4000-8000-0000000000e2"
    write_history(user_home, {sid: (str(project_cwd), 3)})
    piped = cairn(env, project_cwd, "install")  # stdin is not a terminal: told, not asked
    assert piped.returncode == 0, piped.stderr
    assert "found 1 Claude Code session in 1 project, ~4 events; import them any time" in (
        piped.stdout
    )
    assert api(isolated_home, f"/api/observations?session_id={sid}")["items"] == []

    result = cairn(env, project_cwd, "install", "--yes")
    assert result.returncode == 0, result.stderr
    assert "imported 1 sessions in 1 projects: 3 observations, 1 prompts" in result.stdout
    items = api(isolated_home, f"/api/observations?session_id={sid}")["items"]
    assert sorted(i["title"] for i in items) == [f"Run: make t{i}" for i in range(3)]

    again = cairn(env, project_cwd, "install", "--yes")
    assert again.returncode == 0, again.stderr
    assert "found" not in again.stdout and "imported" not in again.stdout
