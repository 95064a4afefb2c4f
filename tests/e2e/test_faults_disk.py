"""The database refuses writes (full: a size cap makes SQLite answer SQLITE_FULL exactly as a
full disk does) or another process holds a long write lock: the API answers a clear 507/503,
reads keep working, hooks spool, and nothing is lost once space / the lock returns."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.hook_sessions import Session, drain_spool, hook_env, make_project, marker_counts
from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e

LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def hold_write_lock(db: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(db), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def post(worker: WorkerProcess, title: str, body: str = "") -> tuple[int, dict[str, object]]:
    status, payload = worker.request(
        "POST",
        "/api/observations",
        {"project": "/repo", "type": "note", "title": title, "body": body},
    )
    return status, payload  # type: ignore[return-value]


def test_full_database_507_then_space_returns_and_nothing_is_lost(isolated_home: Path) -> None:
    worker = WorkerProcess(home=isolated_home, env_extra={"CAIRN_MAX_DB_BYTES": "1000000"}).start()
    acknowledged: list[int] = []
    try:
        for i in range(5000):
            status, payload = post(worker, f"fill {i}", "lorem ipsum dolor " * 120 + str(i))
            if status == 507:
                error = payload["error"]
                assert error["code"] == "insufficient_storage"  # type: ignore[index]
                assert "full" in error["message"]  # type: ignore[index]
                break
            assert status == 201, payload
            acknowledged.append(int(payload["id"]))  # type: ignore[arg-type]
        else:
            raise AssertionError("the capped database never filled up")
        assert acknowledged
        # Top up with small writes too, so no page has room left for a hook's small events.
        for i in range(5000):
            status, payload = post(worker, f"top {i}")
            if status == 507:
                break
            assert status == 201, payload
            acknowledged.append(int(payload["id"]))  # type: ignore[arg-type]
        assert worker.request("GET", "/api/status")[0] == 200  # reads still work
        # Hooks meanwhile: every write refused -> spooled, exit 0, no error shown to the agent.
        project = make_project(isolated_home.parent)
        session = Session("full", project, 8, hook_env(isolated_home, CAIRN_AUTOSTART="0"))
        session.run()
        assert all(run.exit_code == 0 and run.stdout == "" for run in session.runs[1:])
        waiting = worker.request("GET", "/api/spool")[1]["backlog"]["events"]  # type: ignore[index]
        assert waiting > 0  # (a small write may still fit in a page freed earlier)

        # Space returns (the cap is lifted) and the worker restarts: the spool replays.
        worker.stop()
        worker.env_extra["CAIRN_MAX_DB_BYTES"] = "0"
        worker.start()
        drain_spool(worker)
        assert set(marker_counts(worker, "full")) == session.markers
        ids = acknowledged[-400:]
        status, body = worker.request("GET", "/api/observations?ids=" + ",".join(map(str, ids)))
        assert len(body["items"]) == len(ids)  # type: ignore[index]
        assert post(worker, "after the disk was freed")[0] == 201
    finally:
        worker.stop()


def test_long_write_lock_503_within_busy_timeout_then_no_loss(isolated_home: Path) -> None:
    worker = WorkerProcess(home=isolated_home, env_extra={"CAIRN_BUSY_TIMEOUT_MS": "400"}).start()
    db = isolated_home / "cairn.db"
    project = make_project(isolated_home.parent)
    try:
        assert post(worker, "before")[0] == 201
        # A short lock: the write waits for it (within the busy timeout) and succeeds.
        short = hold_write_lock(db, 0.15)
        assert post(worker, "waited")[0] == 201
        short.wait(10)

        locker = hold_write_lock(db, 6)
        t0 = time.monotonic()
        status, payload = post(worker, "blocked")
        waited = time.monotonic() - t0
        assert status == 503
        assert "busy" in payload["error"]["message"]  # type: ignore[index]
        assert waited < 5  # answered after the busy timeout, not after the lock holder let go
        assert worker.request("GET", "/api/observations?limit=5")[0] == 200  # WAL: reads go on
        session = Session("locked", project, 5, hook_env(isolated_home, CAIRN_AUTOSTART="0"))
        session.run()
        assert all(run.exit_code == 0 for run in session.runs)
        locker.wait(30)

        assert post(worker, "after")[0] == 201
        drain_spool(worker)
        assert set(marker_counts(worker, "locked")) == session.markers
    finally:
        worker.stop()


def _chattr(paths: list[Path], flag: str) -> bool:
    try:
        done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.mark.parametrize("when", ["while running", "before start"])
def test_read_only_database_507_reads_go_on_nothing_lost(isolated_home: Path, when: str) -> None:
    """The database files become immutable (chattr +i: refused even to root, like a read-only
    mount): writes answer 507 with a message, reads work, hooks spool; writable again -> replay."""
    worker = WorkerProcess(home=isolated_home).start()
    files = sorted(isolated_home.glob("cairn.db*"))
    project = make_project(isolated_home.parent)
    locked = False
    try:
        assert post(worker, "before")[0] == 201
        if when == "before start":
            worker.stop()
            files = sorted(isolated_home.glob("cairn.db*"))
        locked = _chattr(files, "+i")
        if not locked:
            pytest.skip("chattr +i is not available here (needs root on ext4/xfs)")
        if when == "before start":
            worker.start()
        status, payload = post(worker, "refused")
        assert status == 507, payload
        assert payload["error"]["code"] == "insufficient_storage"  # type: ignore[index]
        assert worker.request("GET", "/api/observations")[0] == 200
        session = Session("readonly", project, 4, hook_env(isolated_home, CAIRN_AUTOSTART="0"))
        session.run()
        assert all(run.exit_code == 0 for run in session.runs)
        assert _chattr(files, "-i")
        locked = False
        worker.stop()
        worker.start()
        drain_spool(worker)
        assert set(marker_counts(worker, "readonly")) == session.markers
    finally:
        if locked:
            _chattr(files, "-i")
        worker.stop()
