"""The load scenario shared by tests/e2e/test_load.py (small, in CI) and bench/load.py (full):
N concurrent sessions of real PostToolUse hook processes, dashboard-like SSE clients, and a
search every 100 ms, against one real worker. Measures hook latency and the worker's CPU and RSS;
checks nothing is lost and every SSE client saw every event once, in order."""

from __future__ import annotations

import json
import math
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.hook_sessions import (
    MARKER,
    Session,
    drain_spool,
    hook_env,
    make_project,
    marker_counts,
)
from tests.e2e.worker_process import EventStream, WorkerProcess

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def memory_kib(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def percentile(samples: list[float], pct: float) -> float:
    if not samples:
        return 0.0
    ordered = sorted(samples)  # nearest rank
    return ordered[min(len(ordered), max(1, math.ceil(pct / 100 * len(ordered)))) - 1]


class SSEClient:
    """A dashboard-like EventSource: reconnects with Last-Event-ID when its stream ends."""

    def __init__(self, worker: WorkerProcess) -> None:
        self.worker = worker
        self.ids: list[int] = []
        self.markers: list[str] = []
        self.resets = 0
        self.reconnects = 0
        self.last_id: str | None = None
        self.stop = threading.Event()
        self.stream: EventStream | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.stream = self.worker.events(last_event_id=self.last_id, timeout=30)
            except (OSError, RuntimeError):
                time.sleep(0.2)
                continue
            for item in self.stream:
                if "event" not in item:
                    continue
                self.last_id = item["id"]
                if item["event"] == "stream.reset":
                    self.resets += 1
                    continue
                self.ids.append(int(item["id"].rsplit("-", 1)[1]))
                if item["event"] == "observation.created":
                    data = json.loads(item["data"])
                    text = f"{data.get('title', '')} {data.get('body', '')}".split()
                    self.markers.extend({w for w in text if w.startswith(MARKER)})
            if not self.stop.is_set():
                self.reconnects += 1

    def close(self) -> None:
        self.stop.set()
        if self.stream is not None:
            self.stream.close()
        self.thread.join(10)


@dataclass
class LoadResult:
    sessions: int
    events_per_session: int
    hooks: int
    seconds: float
    hook_p50_ms: float
    hook_p95_ms: float
    hook_max_ms: float
    hook_nonzero_exits: int
    searches: int
    search_p95_ms: float
    search_errors: int
    worker_cpu_seconds: float
    worker_cpu_percent: float
    worker_rss_mib: float
    worker_peak_rss_mib: float
    lost: int
    duplicated: int
    sse_clients: int
    sse_missing: list[int] = field(default_factory=list)
    sse_out_of_order: list[int] = field(default_factory=list)
    sse_resets: int = 0
    spooled_then_replayed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_load(
    root: Path,
    *,
    sessions: int = 8,
    events: int = 1000,
    sse_clients: int = 4,
    search_every: float = 0.1,
    env_extra: dict[str, str] | None = None,
) -> LoadResult:
    home = root / "cairn-home"
    worker = WorkerProcess(home=home, env_extra=env_extra or {}).start()
    try:
        pid = worker.pid
        project = make_project(root)
        env = hook_env(home, CAIRN_AUTOSTART="0")
        runs = [Session(f"load-s{k}", project, events, env) for k in range(sessions)]
        clients = [SSEClient(worker) for _ in range(sse_clients)]
        for _ in range(200):  # all listening before the first event
            if worker.request("GET", "/api/status")[1]["sse_clients"] == sse_clients:  # type: ignore[index]
                break
            time.sleep(0.05)
        done = threading.Event()
        search_ms: list[float] = []
        search_errors = 0

        def searcher() -> None:
            nonlocal search_errors
            words = ["echo", "step", "cairn", "evt", "load", "command", "stdout"]
            i = 0
            while not done.wait(search_every):
                q = urllib.parse.quote(f"{words[i % len(words)]} {words[(i + 3) % len(words)]}")
                t0 = time.perf_counter()
                status, _ = worker.request("GET", f"/api/search?q={q}&limit=10", timeout=30)
                search_ms.append((time.perf_counter() - t0) * 1000)
                if status != 200:
                    search_errors += 1
                i += 1

        search_thread = threading.Thread(target=searcher, daemon=True)
        cpu0, t0 = cpu_seconds(pid), time.perf_counter()
        search_thread.start()
        threads = [threading.Thread(target=s.run) for s in runs]
        for t in threads:
            t.start()
        peak = 0
        while any(t.is_alive() for t in threads):
            peak = max(peak, memory_kib(pid).get("VmRSS", 0))
            time.sleep(0.25)
        for t in threads:
            t.join()
        seconds = time.perf_counter() - t0
        cpu = cpu_seconds(pid) - cpu0
        done.set()
        search_thread.join(30)
        replay = drain_spool(worker)
        # Let the SSE clients catch up with the last events (and any replayed ones).
        expected = {m for s in runs for m in s.markers}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(set(c.markers) < expected for c in clients):
            time.sleep(0.1)
        for client in clients:
            client.close()
        mem = memory_kib(pid)

        lost = duplicated = 0
        for s in runs:
            counts = marker_counts(worker, s.session_id)
            lost += len(s.markers - set(counts))
            duplicated += sum(1 for n in counts.values() if n > 1)
        hook_ms = [r.seconds * 1000 for s in runs for r in s.runs[1:]]
        return LoadResult(
            sessions=sessions,
            events_per_session=events,
            hooks=sum(len(s.runs) for s in runs),
            seconds=round(seconds, 2),
            hook_p50_ms=round(percentile(hook_ms, 50), 1),
            hook_p95_ms=round(percentile(hook_ms, 95), 1),
            hook_max_ms=round(max(hook_ms, default=0), 1),
            hook_nonzero_exits=sum(1 for s in runs for r in s.runs if r.exit_code != 0),
            searches=len(search_ms),
            search_p95_ms=round(percentile(search_ms, 95), 1),
            search_errors=search_errors,
            worker_cpu_seconds=round(cpu, 2),
            worker_cpu_percent=round(100 * cpu / seconds, 1),
            worker_rss_mib=round(mem.get("VmRSS", 0) / 1024, 1),
            worker_peak_rss_mib=round(max(peak, mem.get("VmHWM", 0)) / 1024, 1),
            lost=lost,
            duplicated=duplicated,
            sse_clients=sse_clients,
            sse_missing=[len(expected - set(c.markers)) for c in clients],
            sse_out_of_order=[
                sum(1 for a, b in zip(c.ids, c.ids[1:], strict=False) if b <= a) for c in clients
            ],
            sse_resets=sum(c.resets for c in clients),
            spooled_then_replayed=int(replay.get("replayed", 0)),
        )
    finally:
        worker.stop()
