"""Kill -9 the worker at random moments while 8 simulated sessions of REAL hook processes post
events with unique ids; after restarts and the spool replay every event is stored exactly once.

CI size: 8 sessions x CAIRN_FAULT_EVENTS (default 30) events, 3 kills. The full size
(8 x 1,250 = 10,000 events, 5 kills) is bench/faults.py.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.fault_scenario import run_kill_scenario
from tests.e2e.hook_sessions import Session, drain_spool, hook_env, make_project, marker_counts
from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e

SESSIONS = 8
EVENTS = int(os.environ.get("CAIRN_FAULT_EVENTS", "30"))


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
    result = run_kill_scenario(isolated_home, seed=seed, sessions=SESSIONS, events=EVENTS, kills=3)
    assert result.kills, "the worker was never killed: the sessions finished too fast to test"
    assert result.nonzero_exits == 0, "a hook exited non-zero"
    assert result.lost == 0 and result.duplicated == 0, result.as_dict()
    assert result.stored == result.events
    assert result.corrupt == 0
    # Some events really went the offline way (spooled while the worker was down).
    assert result.replayed > 0, result.as_dict()


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
        if not spawned_pid:  # a worker a hook spawned late must not outlive the test either
            late = worker.runtime()
            if late is not None and late.get("pid") != killed:
                spawned_pid = int(late["pid"])
        if spawned_pid:
            os.kill(spawned_pid, signal.SIGTERM)
            for _ in range(100):
                try:
                    os.kill(spawned_pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
