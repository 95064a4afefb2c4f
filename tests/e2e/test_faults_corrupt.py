"""A corrupted database file: detected at start, moved aside with a timestamp, a fresh one
started, the hooks' spool kept and replayed, and the move reported by `cairn status`,
`cairn doctor`, /api/status and the dashboard (on every start until the file is removed)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.e2e.hook_sessions import Session, drain_spool, hook_env, make_project, marker_counts
from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e


def damage(db: Path, how: str) -> None:
    raw = bytearray(db.read_bytes())
    if how == "truncated":
        raw = raw[: len(raw) // 2 + 100]
    else:  # garbage pages: the header survives, the b-tree pages do not
        for offset in range(4096, len(raw), 4096):
            raw[offset + 8 : offset + 1000] = os.urandom(992)
    db.write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_corrupt_database_is_moved_aside_reported_and_the_spool_kept(
    isolated_home: Path, how: str
) -> None:
    worker = WorkerProcess(home=isolated_home).start()
    for i in range(200):
        worker.request(
            "POST",
            "/api/observations",
            {"project": "p", "type": "note", "title": f"old {i} " + "x" * 300},
        )
    worker.stop(signal.SIGTERM)
    db = isolated_home / "cairn.db"
    assert not (isolated_home / "cairn.db-wal").exists()  # clean stop checkpointed the WAL
    damage(db, how)

    # While the worker is down a session's hooks spool their events.
    project = make_project(isolated_home.parent)
    offline = Session("offline", project, 5, hook_env(isolated_home, CAIRN_AUTOSTART="0"))
    offline.run()
    assert any((isolated_home / "spool").glob("*.jsonl"))

    worker.start()
    try:
        status, data = worker.request("GET", "/api/status")
        assert status == 200
        moved = Path(data["recovered_from"])
        assert moved.parent == isolated_home and moved.name.startswith("cairn.db.corrupt-")
        assert moved.exists() and data["corrupt_databases"] == [str(moved)]
        assert data["counts"]["observations"] <= 5  # a fresh database (plus replayed events)

        drain_spool(worker)
        assert set(marker_counts(worker, "offline")) == offline.markers  # the spool survived

        text = worker.cli("status")
        assert (
            "WARNING: a corrupt database was moved aside" in text.stdout
            and str(moved) in text.stdout
        )
        doctor = worker.cli("doctor", "--json")
        checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
        assert checks["recovery"]["status"] == "warn" and str(moved) in checks["recovery"]["detail"]

        page = worker.request_text("GET", "/", headers={"Accept": "text/html"})
        assert "The database was damaged and moved aside" in page and moved.name in page

        # Still reported after another restart (the file is still there) ...
        worker.stop()
        worker.start()
        assert worker.request("GET", "/api/status")[1]["recovered_from"] == str(moved)
        # ... and no longer once the user removed it.
        moved.unlink()
        assert worker.request("GET", "/api/status")[1]["recovered_from"] is None
    finally:
        worker.stop()
