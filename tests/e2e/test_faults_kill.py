"""Kill -9 the worker at random moments while 8 simulated sessions of REAL hook processes post
events with unique ids; after restarts and the spool replay every event is stored exactly once.

CI size: 8 sessions x CAIRN_FAULT_EVENTS (default 30) events, 3 kills. The full size
(8 x 1,250 = 10,000 events) runs with CAIRN_FAULT_EVENTS=1250 (see bench/load.py for the load run).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.hook_sessions import Session, drain_spool, hook_env, make_project, marker_counts
from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e

SESSIONS = 8
EVENTS = int(os.environ.get("CAIRN_FAULT_EVENTS", "30"))


def run_sessions(sessions: list[Session]) -> None:
    threads = [threading.Thread(target=s.run) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def assert_exactly_once(worker: WorkerProcess, sessions: list[Session]) -> None:
    for session in sessions:
        counts = marker_counts(worker, session.session_id)
        missing = session.markers - set(counts)
        doubled = {m: n for m, n in counts.items() if n != 1}
        assert not missing, (
            f"{session.session_id}: {len(missing)} events lost, e.g. {sorted(missing)[:3]}"
        )
        assert not doubled, f"{session.session_id}: stored more than once: {doubled}"
        assert set(counts) == session.markers


@pytest.mark.parametrize("seed", [1, 2])
def test_kill_9_at_random_moments_loses_and_duplicates_nothing(
    isolated_home: Path, seed: int
) -> None:
    rng = random.Random(seed)
    worker = WorkerProcess(
        home=isolated_home, env_extra={"CAIRN_SPOOL_REPLAY_SECONDS": "0.5"}
    ).start()
    project = make_project(isolated_home.parent)
    # The hooks may not start a worker themselves here: this test owns the worker's lifecycle.
    env = hook_env(isolated_home, CAIRN_AUTOSTART="0")
    sessions = [Session(f"kill{seed}-s{k}", project, EVENTS, env) for k in range(SESSIONS)]
    done = threading.Event()
    kills: list[float] = []

    def killer() -> None:
        started = time.monotonic()
        for _ in range(3):
            if done.wait(rng.uniform(0.5, 3.0)):
                return
            worker.stop(signal.SIGKILL)
            kills.append(time.monotonic() - started)
            time.sleep(rng.uniform(0.1, 1.0))  # hooks meanwhile find no worker and spool
            worker.start()

    chaos = threading.Thread(target=killer)
    try:
        chaos.start()
        run_sessions(sessions)
        done.set()
        chaos.join()
        assert kills, "the worker was never killed: the sessions finished too fast to test"
        for session in sessions:
            assert all(run.exit_code == 0 for run in session.runs), "a hook exited non-zero"
        replay = drain_spool(worker)
        assert replay["backlog"]["events"] == 0
        status, spool = worker.request("GET", "/api/spool")
        assert status == 200 and spool["corrupt"] == 0
        # Some events really went the offline way (spooled while the worker was down).
        assert spool["replayed"] + spool["duplicates"] > 0, spool
        assert_exactly_once(worker, sessions)
    finally:
        done.set()
        chaos.join()
        worker.stop()


def test_hooks_restart_a_killed_worker_themselves(isolated_home: Path) -> None:
    """With autostart on (the default), the next hook after a crash spawns a fresh worker."""
    worker = WorkerProcess(home=isolated_home).start()
    project = make_project(isolated_home.parent)
    env = hook_env(isolated_home)
    first = Session("auto-a", project, 5, env)
    first.run()
    killed = worker.pid
    worker.stop(signal.SIGKILL)
    spawned_pid = 0
    try:
        second = Session("auto-b", project, 10, env)
        second.run()  # the first of these finds no worker, spawns one and spools
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            info = worker.runtime()
            if info is not None and info.get("pid") != killed:
                spawned_pid = int(info["pid"])
                worker.port = int(info["port"])
                if worker.request("GET", "/health")[0] == 200:
                    break
            time.sleep(0.1)
        assert spawned_pid, "no hook restarted the worker"
        drain_spool(worker)
        assert_exactly_once(worker, [first, second])
    finally:
        if spawned_pid:
            os.kill(spawned_pid, signal.SIGTERM)
            for _ in range(100):
                try:
                    os.kill(spawned_pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
