import json
import signal

import pytest

from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e


def test_real_worker_survives_sigkill_with_acknowledged_writes(worker: WorkerProcess) -> None:
    ids = []
    for i in range(50):
        status, body = worker.request(
            "POST",
            "/api/observations",
            {"project": "/repo", "type": "command", "title": f"cmd {i}", "event_id": f"e{i}"},
        )
        assert status == 201
        ids.append(body["id"])
    worker.stop(signal.SIGKILL)
    assert (worker.home / "worker.json").exists()  # left behind by the crash: stale
    worker.start()
    info = json.loads((worker.home / "worker.json").read_text())
    assert info["port"] == worker.port
    status, body = worker.request("GET", "/api/observations?ids=" + ",".join(map(str, ids)))
    assert status == 200 and len(body["items"]) == 50


def test_sigterm_removes_runtime_file(worker: WorkerProcess) -> None:
    assert worker.stop(signal.SIGTERM) == 0
    assert not (worker.home / "worker.json").exists()
