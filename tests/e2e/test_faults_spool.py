"""Corrupted spool lines (torn writes, binary garbage, foreign JSON) are skipped and counted by
the real worker's replay; they never block the good lines around them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.hook_sessions import Session, drain_spool, hook_env, make_project, marker_counts
from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e

GARBAGE = [
    b'{"method": "POST", "path": "/api/observations", "body": {"project": "p", "ty',  # torn
    b"\x00\xff\xfe binary \x80\x81",
    b"[1, 2, 3]",
    b'{"method": "DELETE", "path": "/api/memories/1", "body": {}}',  # not a route hooks use
    b'{"method": "POST", "path": "/api/observations", "body": "not an object"}',
    b"NaN",
]


def test_corrupt_spool_lines_are_skipped_and_counted(isolated_home: Path) -> None:
    project = make_project(isolated_home.parent)
    # The worker is down: a real session spools its events ...
    first = Session("spool-a", project, 4, hook_env(isolated_home, CAIRN_AUTOSTART="0"))
    first.run()
    spool = isolated_home / "spool"
    files = sorted(spool.glob("*.jsonl"))
    assert files
    # ... and the file gets damaged between good lines (a crash mid-append, a bad disk block).
    lines = files[0].read_bytes().splitlines()
    mixed = [lines[0], *GARBAGE[:3], *lines[1:3], *GARBAGE[3:], *lines[3:]]
    files[0].write_bytes(b"\n".join(mixed) + b"\n")

    worker = WorkerProcess(home=isolated_home).start()
    try:
        drain_spool(worker)
        status, data = worker.request("GET", "/api/spool")
        assert status == 200
        assert data["corrupt"] + data["rejected"] == len(GARBAGE)
        assert data["backlog"]["events"] == 0
        assert set(marker_counts(worker, "spool-a")) == first.markers
        # Later sessions are unaffected.
        second = Session("spool-b", project, 3, hook_env(isolated_home, CAIRN_AUTOSTART="0"))
        second.run()
        assert set(marker_counts(worker, "spool-b")) == second.markers
    finally:
        worker.stop()
