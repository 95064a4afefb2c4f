"""The SSE stream of a real worker: event names and ids, keepalive pings, Last-Event-ID resume,
the cap on concurrent clients."""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]


@pytest.fixture
def sse_worker(isolated_home: Path, backend: str) -> Iterator[WorkerProcess]:
    """A worker with quick pings and a small client cap; on `postgres` over the test's team
    database (the `backend` fixture set CAIRN_DATABASE_URL)."""
    env = {"CAIRN_SSE_PING_SECONDS": "0.3", "CAIRN_SSE_MAX_CLIENTS": "3"}
    if url := os.environ.get("CAIRN_DATABASE_URL", ""):
        env["CAIRN_DATABASE_URL"] = url
    proc = WorkerProcess(home=isolated_home, env_extra=env).start()
    try:
        yield proc
    finally:
        proc.stop()


class Listener:
    """Reads one SSE stream in a thread; events land in a queue."""

    def __init__(self, worker: WorkerProcess, last_event_id: str | None = None) -> None:
        self.items: queue.Queue[dict[str, str]] = queue.Queue()
        self.stream = worker.events(last_event_id=last_event_id)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for item in self.stream:
            self.items.put(item)

    def events(self, n: int, timeout: float = 10) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        while len(out) < n:
            item = self.items.get(timeout=timeout)
            if "event" in item:
                out.append(item)
        return out

    def comment(self, timeout: float = 10) -> str:
        while True:
            item = self.items.get(timeout=timeout)
            if "comment" in item:
                return item["comment"]

    def close(self) -> None:
        self.stream.close()


def wait_clients(worker: WorkerProcess, n: int) -> None:
    for _ in range(200):
        if worker.request("GET", "/api/status")[1]["sse_clients"] == n:  # type: ignore[index]
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"expected {n} SSE clients")


def test_events_arrive_named_with_ids_and_in_order(sse_worker: WorkerProcess) -> None:
    listener = Listener(sse_worker)
    wait_clients(sse_worker, 1)
    sse_worker.request("POST", "/api/sessions", {"session_id": "s1", "project": "/repo"})
    sse_worker.request("POST", "/api/prompts", {"session_id": "s1", "text": "fix the parser"})
    for i in range(5):
        sse_worker.request(
            "POST",
            "/api/observations",
            {"project": "/repo", "session_id": "s1", "type": "command", "title": f"step {i}"},
        )
    sse_worker.request("POST", "/api/sessions/s1/end", {"reason": "exit"})
    events = listener.events(8)
    listener.close()
    assert [e["event"] for e in events] == [
        "session.started",
        "prompt.created",
        *["observation.created"] * 5,
        "session.ended",
    ]
    titles = [json.loads(e["data"])["title"] for e in events if e["event"] == "observation.created"]
    assert titles == [f"step {i}" for i in range(5)]
    seqs = [int(e["id"].rsplit("-", 1)[1]) for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == 8


def test_keepalive_pings_flow_while_idle(sse_worker: WorkerProcess) -> None:
    listener = Listener(sse_worker)
    assert listener.comment().startswith("ping")
    assert listener.comment().startswith("ping")
    listener.close()


def test_last_event_id_resumes_exactly_after_the_missed_events(sse_worker: WorkerProcess) -> None:
    listener = Listener(sse_worker)
    wait_clients(sse_worker, 1)
    for i in range(3):
        sse_worker.request(
            "POST", "/api/observations", {"project": "p", "type": "note", "title": f"a{i}"}
        )
    seen = listener.events(3)
    listener.close()
    wait_clients(sse_worker, 0)
    for i in range(4):
        sse_worker.request(
            "POST", "/api/observations", {"project": "p", "type": "note", "title": f"b{i}"}
        )
    resumed = Listener(sse_worker, last_event_id=seen[-1]["id"])
    missed = resumed.events(4)
    assert [json.loads(e["data"])["title"] for e in missed] == ["b0", "b1", "b2", "b3"]
    sse_worker.request(
        "POST", "/api/observations", {"project": "p", "type": "note", "title": "live"}
    )
    assert json.loads(resumed.events(1)[0]["data"])["title"] == "live"
    resumed.close()


def test_resume_across_a_restart_starts_with_a_reset(sse_worker: WorkerProcess) -> None:
    listener = Listener(sse_worker)
    wait_clients(sse_worker, 1)
    sse_worker.request("POST", "/api/observations", {"project": "p", "type": "note", "title": "x"})
    old_id = listener.events(1)[0]["id"]
    listener.close()
    sse_worker.stop()
    sse_worker.start()
    resumed = Listener(sse_worker, last_event_id=old_id)
    assert resumed.events(1)[0]["event"] == "stream.reset"
    resumed.close()


def test_client_cap_answers_503_json(sse_worker: WorkerProcess) -> None:
    listeners = [Listener(sse_worker) for _ in range(3)]
    wait_clients(sse_worker, 3)
    status, body = sse_worker.request("GET", "/api/events")
    assert status == 503
    assert body["error"]["code"] == "unavailable" and "limit 3" in body["error"]["message"]  # type: ignore[index]
    for listener in listeners:
        listener.close()
    wait_clients(sse_worker, 0)
    again = Listener(sse_worker)
    wait_clients(sse_worker, 1)
    again.close()
