"""Kill -9 at random moments while simulated sessions of real hook processes post events:
shared by tests/e2e/test_faults_kill.py (CI size) and bench/faults.py (10,000 events)."""

from __future__ import annotations

import random
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.hook_sessions import Session, drain_spool, hook_env, make_project, marker_counts
from tests.e2e.worker_process import WorkerProcess


@dataclass
class KillResult:
    events: int
    kills: list[float]
    stored: int
    lost: int
    duplicated: int
    nonzero_exits: int
    replayed: int
    corrupt: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_kill_scenario(
    home: Path, *, seed: int, sessions: int = 8, events: int = 30, kills: int = 3
) -> KillResult:
    rng = random.Random(seed)
    worker = WorkerProcess(home=home, env_extra={"CAIRN_SPOOL_REPLAY_SECONDS": "0.5"}).start()
    project = make_project(home.parent)
    # The hooks may not start a worker themselves here: the scenario owns the worker's lifecycle.
    env = hook_env(home, CAIRN_AUTOSTART="0")
    runs = [Session(f"kill{seed}-s{k}", project, events, env) for k in range(sessions)]
    done = threading.Event()
    kill_times: list[float] = []
    started = time.monotonic()
    # Spread the kills over the expected run (each hook takes some tens of ms at least).
    horizon = max(1.5, events * 0.05)

    def killer() -> None:
        for _ in range(kills):
            if done.wait(rng.uniform(0.3, horizon / kills)):
                return
            worker.stop(signal.SIGKILL)
            kill_times.append(round(time.monotonic() - started, 2))
            time.sleep(rng.uniform(0.1, 1.0))  # meanwhile hooks find no worker and spool
            worker.start()

    chaos = threading.Thread(target=killer)
    try:
        chaos.start()
        threads = [threading.Thread(target=s.run) for s in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.set()
        chaos.join()
        drain_spool(worker)
        spool = worker.request("GET", "/api/spool")[1]
        stored = lost = duplicated = 0
        for s in runs:
            counts = marker_counts(worker, s.session_id)
            stored += sum(counts.values())
            lost += len(s.markers - set(counts))
            duplicated += sum(1 for n in counts.values() if n != 1)
        return KillResult(
            events=sessions * events,
            kills=kill_times,
            stored=stored,
            lost=lost,
            duplicated=duplicated,
            nonzero_exits=sum(1 for s in runs for r in s.runs if r.exit_code != 0),
            replayed=int(spool["replayed"]) + int(spool["duplicates"]),  # type: ignore[index]
            corrupt=int(spool["corrupt"]),  # type: ignore[index]
            seconds=round(time.monotonic() - started, 1),
        )
    finally:
        done.set()
        chaos.join()
        worker.stop()
