"""The lifecycle CLI in-process (token, status/stop when down) and the worker's log rotation;
the running-worker paths are covered by tests/e2e/test_worker_lifecycle.py."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from worker.cli import main
from worker.client import WorkerDown, request
from worker.server import configure_logging
from worker.settings import Settings, load_settings


def test_token_creates_a_0600_file_and_rotate_replaces_it(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token"]) == 0
    first = capsys.readouterr().out.strip()
    assert first == settings.token_path.read_text().strip()
    assert stat.S_IMODE(settings.token_path.stat().st_mode) == 0o600
    assert main(["token", "--rotate"]) == 0
    out = capsys.readouterr().out
    second = out.strip().splitlines()[-1]
    assert second != first and "revoked" in out
    assert settings.token_path.read_text().strip() == second


def test_status_and_stop_when_no_worker_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status"]) == 1
    assert "not running" in capsys.readouterr().out
    assert main(["status", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["running"] is False
    assert main(["stop"]) == 0
    assert "not running" in capsys.readouterr().out


def test_client_reports_a_down_worker_clearly(settings: Settings) -> None:
    with pytest.raises(WorkerDown, match="cairn start"):
        request(settings, "GET", "/api/status")
    # A runtime file pointing at a dead process is no worker either.
    settings.home.mkdir(parents=True, exist_ok=True)
    settings.runtime_path.write_text(json.dumps({"pid": 2**22 + 12345, "port": 9}))
    with pytest.raises(WorkerDown):
        request(settings, "GET", "/api/status")


def test_bad_configuration_exits_2_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CAIRN_PORT", "http")
    assert main(["status"]) == 2
    assert "CAIRN_PORT" in capsys.readouterr().err


def test_worker_log_rotates(
    monkeypatch: pytest.MonkeyPatch, isolated_home: Path, restore_logging: None
) -> None:
    monkeypatch.setenv("CAIRN_LOG_MAX_BYTES", "2000")
    monkeypatch.setenv("CAIRN_LOG_BACKUPS", "2")
    settings = load_settings()
    configure_logging(settings, to_file=True)
    log = logging.getLogger("worker.test")
    for i in range(200):
        log.info("line %d %s", i, "x" * 50)
    files = sorted(p.name for p in settings.logs_dir.iterdir())
    assert files == ["worker.log", "worker.log.1", "worker.log.2"]
    assert all((settings.logs_dir / f).stat().st_size <= 2100 for f in files)
    assert "line 199" in (settings.logs_dir / "worker.log").read_text()
