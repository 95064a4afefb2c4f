"""Never lose an event: hooks keep firing while the worker is killed (-9) and restarted; on both
backends (the home's SQLite file, a team database that outlives each killed worker)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from tests.backends import process_store, value
from tests.e2e.hook_runner import hook_env, run_hook, tool_payload, wait_for
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

SESSIONS = 4
EVENTS_PER_SESSION = 60


def test_events_survive_worker_kills_exactly_once(
    isolated_home: Path, backend: str, tmp_path: Path
) -> None:
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    url = os.environ.get("CAIRN_DATABASE_URL", "")
    team = {"CAIRN_DATABASE_URL": url} if url else {}
    worker = WorkerProcess(home=isolated_home, env_extra=team).start()
    # The test restarts the worker itself, so the hooks must not start their own.
    env = hook_env(isolated_home, CAIRN_PORT=str(worker.port), CAIRN_AUTOSTART="0")
    failures: list[str] = []
    done = [0]

    def session(n: int) -> None:
        for i in range(EVENTS_PER_SESSION):
            payload = tool_payload(
                f"sess-k{n}",
                project,
                "Bash",
                {"command": f"step {n}-{i}"},
                {"stdout": ""},
                f"toolu_{n}_{i}",
            )
            result = run_hook("post-tool-use", payload, env)
            if result.returncode != 0 or result.stdout:
                failures.append(f"{n}-{i}: rc={result.returncode} out={result.stdout!r}")
            done[0] += 1

    threads = [threading.Thread(target=session, args=(n,)) for n in range(SESSIONS)]
    try:
        for thread in threads:
            thread.start()
        total = SESSIONS * EVENTS_PER_SESSION
        for share in (0.2, 0.55):  # two crashes while the sessions keep working
            wait_for(lambda share=share: done[0] >= total * share, interval=0.01)
            worker.stop(signal.SIGKILL)
            wait_for(lambda share=share: done[0] >= total * share + SESSIONS * 3, interval=0.01)
            worker.start()
        for thread in threads:
            thread.join(timeout=600)
        assert not failures, failures[:5]

        def drained() -> bool:
            status, body = worker.request("POST", "/api/spool/replay", {})
            return status == 200 and body["backlog"]["events"] == 0

        wait_for(drained)
        log = (isolated_home / "logs" / "hooks.log").read_text()
        assert "spooling" in log  # events really met a dead worker
        for n in range(SESSIONS):
            status, body = worker.request(
                "GET", f"/api/observations?session_id=sess-k{n}&limit=500"
            )
            assert status == 200
            titles = [item["title"] for item in body["items"]]
            expected = {f"Run: step {n}-{i}" for i in range(EVENTS_PER_SESSION)}
            assert len(titles) == EVENTS_PER_SESSION and set(titles) == expected, n
        with process_store(worker.env()) as store:  # the worker's own database: file or team
            assert store.backend == backend
            stored = value(
                store, "SELECT COUNT(*) FROM observations WHERE session_id LIKE 'sess-k%'"
            )
            assert stored == SESSIONS * EVENTS_PER_SESSION
    finally:
        worker.stop()
