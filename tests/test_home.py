"""The private home: whatever creates $CAIRN_HOME makes it 0700 (or tightens it) and every file in
it that holds memories or secrets 0600, whatever the umask.

Tests run as root, which reads any file whatever its mode, so these assert the mode bits (stat)
that protect a normal user, not an access denial.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.e2e.hook_runner import base, hook_env, run_hook
from worker.app import create_app
from worker.cli import main
from worker.cli.doctor import run_checks
from worker.home import ensure_home
from worker.server import configure_logging
from worker.settings import Settings
from worker.store import Store


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The common default umask (022): files made without care come out 0644, folders 0755."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def sides(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


def test_install_creates_a_private_home(
    user_home: Path, project_cwd: Path, settings: Settings
) -> None:
    assert not settings.home.exists()
    assert main(["install", "--no-start"]) == 0
    assert mode(settings.home) == 0o700
    assert mode(settings.home / "install.json") == 0o600


def test_an_open_home_is_tightened_with_a_log_line(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    settings.home.mkdir(mode=0o755)
    os.chmod(settings.home, 0o755)
    with caplog.at_level(logging.WARNING, logger="worker.home"):
        ensure_home(settings.home, settings.logs_dir)
    assert mode(settings.home) == 0o700 and mode(settings.logs_dir) == 0o700
    assert f"{settings.home} had mode 0755" in caplog.text and "tightened to 0700" in caplog.text


def test_database_wal_and_shm_are_0600_from_every_connection(settings: Settings) -> None:
    store = Store(settings.db_path)
    store.open()
    store.write_sync(lambda c: c.execute("CREATE TABLE t (x)"))
    assert [mode(p) for p in sides(settings.db_path)] == [0o600] * 3
    store.close()  # the last connection checkpoints and deletes -wal and -shm
    assert not sides(settings.db_path)[1].exists()
    again = Store(settings.db_path)
    again.open()  # a later connection creates them anew
    again.write_sync(lambda c: c.execute("INSERT INTO t VALUES (1)"))
    assert [mode(p) for p in sides(settings.db_path)] == [0o600] * 3
    assert mode(settings.home) == 0o700
    again.close()


def test_an_existing_open_database_is_tightened(settings: Settings) -> None:
    store = Store(settings.db_path)
    store.open()
    store.close()
    os.chmod(settings.db_path, 0o644)
    os.chmod(settings.home, 0o755)
    store.open()
    assert mode(settings.db_path) == 0o600 and mode(settings.home) == 0o700
    store.close()


def test_the_worker_makes_home_token_database_and_logs_private(
    settings: Settings, restore_logging: None
) -> None:
    configure_logging(settings, to_file=True)
    logging.getLogger("worker.test").warning("a line")
    with TestClient(create_app(settings), base_url="http://127.0.0.1:37800"):
        pass
    assert mode(settings.home) == 0o700 and mode(settings.logs_dir) == 0o700
    assert mode(settings.logs_dir / "worker.log") == 0o600
    assert mode(settings.token_path) == 0o600 and mode(settings.db_path) == 0o600


@pytest.mark.e2e
def test_a_hook_creates_the_home_private_and_tightens_an_open_one(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    env = hook_env(tmp_path / "fresh", CAIRN_AUTOSTART="0")  # no worker: the hook spools
    result = run_hook("SessionStart", base("s-1", project, "SessionStart"), env, cwd=project)
    assert result.returncode == 0
    assert mode(tmp_path / "fresh") == 0o700
    assert mode(tmp_path / "fresh" / "spool") == 0o700
    assert mode(tmp_path / "fresh" / "cache") == 0o700
    # Made 0700 from the start (not by Python's bytecode writer, 0755, then tightened): nothing
    # to log, so no logs folder unless something else was said.
    logs = tmp_path / "fresh" / "logs"
    assert not logs.exists() or "had mode" not in (logs / "hooks.log").read_text()

    opened = tmp_path / "opened"
    (opened / "spool").mkdir(parents=True)
    os.chmod(opened, 0o755)
    env = hook_env(opened, CAIRN_AUTOSTART="0")
    second = run_hook("SessionStart", base("s-2", project, "SessionStart"), env, cwd=project)
    assert second.returncode == 0
    assert mode(opened) == 0o700
    assert "had mode 0755" in (opened / "logs" / "hooks.log").read_text()


def test_doctor_reports_every_file_others_can_read(
    user_home: Path, project_cwd: Path, settings: Settings
) -> None:
    with TestClient(create_app(settings), base_url="http://127.0.0.1:37800"):
        pass
    checks = {c.name: c for c in run_checks(settings)}
    assert checks["permissions"].status == "ok"
    wal = settings.db_path.with_name("cairn.db-wal")
    wal.write_bytes(b"")
    for path, bits in ((settings.home, 0o755), (settings.db_path, 0o644), (wal, 0o640)):
        os.chmod(path, bits)
    (settings.logs_dir).mkdir(exist_ok=True)
    (settings.logs_dir / "worker.log").write_text("x")
    os.chmod(settings.logs_dir / "worker.log", 0o644)
    found = {c.name: c for c in run_checks(settings)}["permissions"]
    assert found.status == "fail"
    for path, bits in (
        (settings.home, "0755"),
        (settings.db_path, "0644"),
        (wal, "0640"),
        (settings.logs_dir / "worker.log", "0644"),
    ):
        assert f"{path} {bits}" in found.detail
    assert found.fix.startswith(f"chmod 700 {settings.home} {settings.logs_dir} && chmod 600 ")
    assert str(settings.token_path) not in found.detail  # 0600 already: not listed


def plant_link(at: Path, victim: Path) -> None:
    victim.write_text("the victim's file\n")
    at.symlink_to(victim)


def test_export_and_report_are_0600_and_never_follow_a_planted_partial_link(
    client: TestClient, settings: Settings, tmp_path: Path
) -> None:
    saved = client.post(
        "/api/observations",
        json={"project": "/p", "session_id": "s-1", "type": "note", "title": "The deploy key"},
    )
    assert saved.status_code in (200, 201), saved.text
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    target = out / "export.jsonl"
    plant_link(out / "export.jsonl.partial", victim)  # the name the export used to write through
    assert main(["export", "-o", str(target), "--quiet"]) == 0
    assert victim.read_text() == "the victim's file\n"
    assert "deploy key" in target.read_text() and mode(target) == 0o600
    assert sorted(p.name for p in out.iterdir()) == ["export.jsonl", "export.jsonl.partial"]

    report = out / "report.md"
    assert main(["report", "-o", str(report)]) == 0
    assert mode(report) == 0o600 and victim.read_text() == "the victim's file\n"

    backups = tmp_path / "bk"
    assert main(["backup", "--output-dir", str(backups), "--quiet"]) == 0
    [copy] = backups.iterdir()
    assert copy.name.endswith("Z.db") and mode(copy) == 0o600 and mode(backups) == 0o700


def test_token_and_runtime_temp_files_never_follow_a_planted_link(
    settings: Settings, tmp_path: Path
) -> None:
    from worker.auth import TokenKeeper
    from worker.runtime import write_runtime

    settings.home.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    pid = os.getpid()
    plant_link(settings.home / f".token.{pid}.tmp", victim)
    plant_link(settings.home / f".worker.json.{pid}.tmp", tmp_path / "victim2.txt")
    keeper = TokenKeeper(settings.token_path)
    keeper.ensure()
    keeper.rotate()
    write_runtime(settings, 37999)
    assert victim.read_text() == "the victim's file\n"
    assert (tmp_path / "victim2.txt").read_text() == "the victim's file\n"
    assert mode(settings.token_path) == 0o600 and mode(settings.runtime_path) == 0o600
