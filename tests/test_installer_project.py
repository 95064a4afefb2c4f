"""`cairn install --project`: the committed files name nothing of this machine, `cairn hook` runs
the hook from PATH (and says clearly when Cairn is missing), both install levels are flagged."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from worker.cli import main
from worker.cli.doctor import run_checks
from worker.hook_command import hook_script_path
from worker.installer.claude_settings import EVENTS, NOT_INSTALLED
from worker.paths import hook_script
from worker.settings import load_settings

BIN = Path(sys.executable).parent
NO_CAIRN_PATH = "/usr/bin:/bin"


def _commands(path: Path) -> dict[str, str]:
    hooks = json.loads(path.read_text())["hooks"]
    return {event: groups[0]["hooks"][0]["command"] for event, groups in hooks.items()}


def _sh(command: str, payload: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a registered command the way Claude Code does: a shell, the hook's JSON on stdin."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=payload,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _clean_env(path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"PATH": path, "CAIRN_HOME": os.environ["CAIRN_HOME"], "CAIRN_DISABLED": "1"})
    return env


def test_project_files_name_no_path_of_this_machine(
    user_home: Path, project_cwd: Path, isolated_home: Path
) -> None:
    assert main(["install", "--no-start", "--project", "--mcp", "--editor", "cursor"]) == 0
    committed = [
        project_cwd / ".claude" / "settings.json",
        project_cwd / ".mcp.json",
        project_cwd / ".cursor" / "mcp.json",
    ]
    machine = [str(hook_script().resolve()), sys.executable, str(isolated_home), str(user_home)]
    for path in committed:
        text = path.read_text()
        assert not [m for m in machine if m in text], (path, text)
    commands = _commands(committed[0])
    assert set(commands) == {e.name for e in EVENTS}
    for event in EVENTS:
        assert f"exec cairn hook {event.arg} " in commands[event.name]
    for path in committed[1:]:
        entry = json.loads(path.read_text())["mcpServers"]["cairn"]
        assert (entry["command"], entry["args"]) == ("cairn", ["mcp"])
    # The user-level Cursor config is this machine's own file: it keeps the absolute interpreter.
    assert main(["install", "--no-start", "--no-hooks", "--editor", "cursor"]) == 0
    entry = json.loads((user_home / ".cursor" / "mcp.json").read_text())["mcpServers"]["cairn"]
    assert os.path.isabs(entry["command"])


def test_local_install_keeps_this_machines_paths(user_home: Path, project_cwd: Path) -> None:
    assert main(["install", "--no-start", "--local"]) == 0
    command = _commands(project_cwd / ".claude" / "settings.local.json")["Stop"]
    assert shlex.split(command)[-2] == str(hook_script().resolve())


def test_the_project_command_runs_cairn_hook_from_path(
    user_home: Path, project_cwd: Path, tmp_path: Path
) -> None:
    assert main(["install", "--no-start", "--project"]) == 0
    command = _commands(project_cwd / ".claude" / "settings.json")["PostToolUse"]
    # A stand-in `cairn` on PATH records how it was called, then runs the real one.
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    calls = tmp_path / "calls"
    cairn = fake_bin / "cairn"
    cairn.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {BIN / "cairn"} "$@"\n')
    cairn.chmod(0o755)
    result = _sh(command, "{}", _clean_env(f"{fake_bin}:{NO_CAIRN_PATH}"))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert calls.read_text() == "hook post-tool-use\n"


@pytest.mark.skipif(
    shutil.which("cairn", path=NO_CAIRN_PATH) is not None, reason="cairn in /usr/bin"
)
def test_without_cairn_the_project_command_says_so_and_never_blocks(
    user_home: Path, project_cwd: Path
) -> None:
    assert main(["install", "--no-start", "--project"]) == 0
    commands = _commands(project_cwd / ".claude" / "settings.json")
    env = _clean_env(NO_CAIRN_PATH)
    for event in EVENTS:
        result = _sh(commands[event.name], '{"session_id": "s"}', env)
        assert result.stderr.strip() == NOT_INSTALLED, result.stderr
        assert "not found" not in result.stderr
        # Exit 2 would block the agent; SessionStart reports once per session (non-blocking).
        assert result.returncode == (1 if event.name == "SessionStart" else 0)
        assert result.stdout == ""


@pytest.mark.e2e
@pytest.mark.parametrize("stdin", ["not json", "", '{"session_id": 5}', "[1, 2]"])
def test_cairn_hook_exits_0_on_bad_input(stdin: str, isolated_home: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"CAIRN_HOME": str(isolated_home), "CAIRN_PORT": "9"})  # nothing listens on 9
    env["PATH"] = NO_CAIRN_PATH  # the hook must not find a `cairn` to start a worker with
    (isolated_home / "spawn.lock").parent.mkdir(parents=True, exist_ok=True)
    for event in ("post-tool-use", "no-such-event"):
        result = subprocess.run(
            [str(BIN / "cairn"), "hook", event],
            input=stdin,
            env={**env, "CAIRN_DISABLED": "0"},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr


def test_cairn_hook_runs_the_hook_script_the_installer_knows() -> None:
    assert hook_script_path() == str(hook_script())


@pytest.mark.e2e
def test_cairn_hook_skips_the_cli_imports(isolated_home: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"CAIRN_HOME": str(isolated_home), "CAIRN_DISABLED": "1"})
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "worker", "hook", "stop"],
        input="{}",
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert "worker.hook_command" in imported and "cairn_hook_run" in imported
    assert not {"worker.cli", "argparse", "numpy", "worker.store"} & imported


def test_uninstall_project_removes_old_and_new_entries(user_home: Path, project_cwd: Path) -> None:
    path = project_cwd / ".claude" / "settings.json"
    path.parent.mkdir()
    mine = {"type": "command", "command": "say done"}
    old = {"type": "command", "command": "/home/a/.venv/bin/python /home/a/cairn_hook.py stop"}
    new = {"type": "command", "command": "exec cairn hook session-start"}
    data = {"hooks": {"Stop": [{"hooks": [mine, old]}], "SessionStart": [{"hooks": [new]}]}}
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert main(["uninstall", "--project"]) == 0
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [{"hooks": [mine]}]}}


def test_both_levels_are_flagged_at_install_and_by_doctor(
    user_home: Path,
    project_cwd: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", f"{BIN}:{NO_CAIRN_PATH}")
    assert main(["install", "--no-start", "--project"]) == 0
    assert "warning" not in capsys.readouterr().err
    # A user-level install made inside a project that already has them.
    assert main(["install", "--no-start"]) == 0
    err = capsys.readouterr().err
    assert str(project_cwd / ".claude" / "settings.json") in err and "runs twice" in err
    hooks = {c.name: c for c in run_checks(load_settings())}["hooks"]
    assert hooks.status == "warn" and "both the user level" in hooks.detail
    assert "runs twice" in hooks.detail
    # The other way round: a project install on top of the user-level one.
    assert main(["uninstall", "--project"]) == 0
    assert main(["install", "--no-start", "--project"]) == 0
    err = capsys.readouterr().err
    assert "also registered in ~/.claude/settings.json" in err and "runs twice" in err


def test_doctor_fails_project_hooks_without_cairn_on_path(
    user_home: Path, project_cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["install", "--no-start", "--project"]) == 0
    monkeypatch.setenv("PATH", NO_CAIRN_PATH)
    hooks = {c.name: c for c in run_checks(load_settings())}["hooks"]
    assert hooks.status == "fail" and "not on PATH" in hooks.detail
    monkeypatch.setenv("PATH", f"{BIN}:{NO_CAIRN_PATH}")
    hooks = {c.name: c for c in run_checks(load_settings())}["hooks"]
    assert hooks.status == "ok", hooks
