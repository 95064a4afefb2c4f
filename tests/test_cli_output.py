"""What a newcomer reads: `cairn --version`, the command `make run` tells them to type, status,
doctor and the Settings page without Python's `None`, and a database size that counts the WAL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from worker import __version__
from worker.cli import main
from worker.cli.doctor import run_checks
from worker.cli.lifecycle import human_bytes
from worker.settings import Settings
from worker.store import Store

VENV_BIN = Path(sys.executable).parent
CAIRN = VENV_BIN / "cairn"
HANG_GUARD = 60  # seconds; only to turn a hang into a failure


def test_version_prints_and_exits_zero() -> None:
    done = subprocess.run(
        [str(CAIRN), "--version"], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"cairn {__version__}"


@pytest.mark.e2e
def test_make_run_names_a_command_that_works_when_cairn_is_not_on_path(
    isolated_home: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env |= {"CAIRN_HOME": str(isolated_home), "CAIRN_PORT": "0", "CAIRN_EMBED_ENABLED": "0"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.Popen(  # what `make run` runs
        [str(CAIRN), "start", "--foreground"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        deadline = time.monotonic() + HANG_GUARD
        while not (isolated_home / "worker.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # serving: a SIGTERM now stops it (before, it would be absorbed)
        shown = lines[1].split("log in with: ", 1)[1].split(" open", 1)[0]
        opened = subprocess.run(
            [shown, "open", "--no-browser"], capture_output=True, text=True, env=env,
            timeout=HANG_GUARD,
        )  # fmt: skip
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:  # never leave the worker behind
            proc.kill()
            proc.wait()
    assert "Cairn worker listening on" in lines[0]
    assert f"log in with: {CAIRN} open" in lines[1]
    assert opened.returncode == 0, opened.stderr
    assert "/login/link/" in opened.stdout


def test_cairn_on_path_is_named_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    from worker.paths import cairn_command

    monkeypatch.setattr(sys, "argv", [str(CAIRN)])
    monkeypatch.setenv("PATH", str(VENV_BIN))
    assert cairn_command() == "cairn"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert cairn_command() == str(CAIRN)


def test_status_shows_no_python_none(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status = client.get("/api/status").json()  # the real payload, with its unset fields
    assert None in status["services"]["keyword_index"].values()
    monkeypatch.setattr("worker.cli.lifecycle.request", lambda *a, **k: status)
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out and "keyword_index: status" in out


def test_status_says_fields_in_words(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`decay: running, every 1 h`, not `running True, interval_seconds 3600.0`."""
    status = client.get("/api/status").json()
    status["services"]["decay"] = {"running": True, "interval_seconds": 3600.0, "runs": 2.0}
    status["services"]["sessions"] = {"watching": False, "idle_seconds": 90}
    monkeypatch.setattr("worker.cli.lifecycle.request", lambda *a, **k: status)
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "  decay: running, every 1 h, runs 2\n" in out
    assert "  sessions: not watching, idle 90 s\n" in out
    assert "True" not in out and "False" not in out and "_seconds" not in out


def test_settings_page_shows_no_python_none(client: TestClient) -> None:
    page = client.get("/settings", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "None" not in page.text
    assert "<code>not set</code>" in page.text  # e.g. CAIRN_EMBED_MODEL_PATH


def test_doctor_counts_the_write_ahead_log(settings: Settings) -> None:
    store = Store(settings.db_path)
    store.open()
    try:
        store.write_sync(lambda c: c.execute("CREATE TABLE t (x)"))
        for _ in range(50):  # recent writes stay in cairn.db-wal until a checkpoint
            store.write_sync(lambda c: c.execute("INSERT INTO t VALUES (?)", ("x" * 4000,)))
        db = settings.db_path.stat().st_size
        wal = settings.db_path.with_name("cairn.db-wal").stat().st_size
        assert wal > db
        detail = {c.name: c for c in run_checks(settings)}["database"].detail
    finally:
        store.close()
    assert human_bytes(db + wal) in detail and "write-ahead log" in detail


@pytest.mark.parametrize("command", [["--help"], ["status"], ["search", "--help"]])
def test_a_reader_that_went_away_ends_the_command_quietly(
    command: list[str], isolated_home: Path
) -> None:
    """`cairn status | head`: the reader is gone before the output is; the command exits as a
    Unix tool does (141; argparse's help swallows the error itself: 0), without a traceback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env |= {"CAIRN_HOME": str(isolated_home), "CAIRN_PORT": "9", "CAIRN_EMBED_ENABLED": "0"}
    read_end, write_end = os.pipe()
    os.close(read_end)  # no reader at all: the first write meets a broken pipe
    try:
        done = subprocess.run(
            [str(CAIRN), *command],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=HANG_GUARD,
        )
    finally:
        os.close(write_end)
    assert done.returncode in (0, 141), done.stderr
    assert command[-1] == "--help" or done.returncode == 141
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
