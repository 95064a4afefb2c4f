"""CLI commands start without the heavy modules (numpy, the store, the model runtime, the web
stack): each CLI command used to import them all, 0.35 s before doing anything. Speed itself is
measured in bench/integrations.py; this checks what is imported, which is behaviour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from worker.settings import Settings
from worker.store import Store

HEAVY = ("numpy", "onnxruntime", "worker.retrieval.keyword_index", "anyio", "starlette", "limits")
HANG_GUARD = 60  # seconds; only to turn a hang into a failure

PROBE = """
import contextlib, io, json, sys
from worker.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def imported_by(argv: list[str], home: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env |= {"CAIRN_HOME": str(home), "CAIRN_PORT": "1", "CAIRN_EMBED_ENABLED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--help"], ["status"], ["doctor"], ["--version"]])
def test_cli_commands_do_not_import_the_heavy_modules(argv: list[str], settings: Settings) -> None:
    store = Store(settings.db_path)  # doctor then checks a real database file
    store.open()
    store.close()
    modules = imported_by(argv, settings.home)
    assert not [m for m in HEAVY if m in modules]
    from worker.cli import COMMAND_MODULES

    # The probe ran the real CLI: the command's own group, or every group for --help/--version.
    assert f"worker.cli.{COMMAND_MODULES.get(argv[0], 'doctor')}" in modules


def test_the_mcp_server_module_does_not_import_the_store(settings: Settings) -> None:
    code = "import sys, worker.mcp_server; print(sorted(m for m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert done.returncode == 0, done.stderr
    assert "'numpy'" not in done.stdout and "'worker.store'" not in done.stdout


def test_each_command_builds_only_its_own_group(tmp_path: Path) -> None:
    import argparse
    import importlib

    from worker.cli import COMMAND_MODULES, MODULES

    registered = {}
    for name in MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"worker.cli.{name}").register(sub)
        registered |= dict.fromkeys(sub.choices, name)
    assert registered == COMMAND_MODULES  # every command, and the module that registers it
    loaded = imported_by(["status"], tmp_path / "home")
    assert not {"worker.cli.doctor", "worker.cli.install", "worker.installer.plan"} & loaded
