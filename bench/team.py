"""Team memory: several real workers on one PostgreSQL database against one worker on SQLite.

Per backend, in one run: W workers (real `python -m worker` processes, each with its own home)
x S sessions each post hook-shaped events concurrently through the API (session start, prompts,
tool observations, each with a Claude-Code-style event id, every event sent twice to exercise
dedupe); then the rows stored are counted against those sent (0 lost, 0 duplicated is the
aim), with the total events/s. On the team database: the time for a decision saved on one
worker to reach another worker's SSE feed (p50/p95 over repeats; aim p95 < 1 s), and the
prompt context p95 on a worker for its teammate's items. PostgreSQL is a throwaway local server
(tests/pg.py), fsync off as in the tests.

    python bench/team.py [--workers 4] [--sessions 2] [--events 100] [--feed 20]

Not measured here (docs/team.md): search p95 at 100k and 1M items in the team database
(bench/search_backends.py measures search on both backends at a chosen size).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Row, percentile, report
from tests import pg
from tests.e2e.worker_process import WorkerProcess

PROJECT = "github.com/acme/app"


def _session_events(worker: WorkerProcess, sid: str, events: int) -> int:
    """Post one session's events (each twice); the number of distinct events sent."""
    sent = 0
    status, body = worker.request(
        "POST", "/api/sessions", {"session_id": sid, "project": PROJECT, "author": "bench@acme.dev"}
    )
    assert status in (200, 201), body
    for i in range(events):
        if i % 5 == 0:
            payload: dict[str, Any] = {
                "session_id": sid,
                "text": f"prompt {i} about the retry helper in {sid}",
                "event_id": f"cc:{sid}:prompt:{i}",
            }
            path = "/api/prompts"
        else:
            payload = {
                "session_id": sid,
                "project": PROJECT,
                "type": "command",
                "title": f"ran pytest -k retry ({sid} #{i})",
                "body": f"{i} passed",
                "event_id": f"cc:{sid}:toolu_{i}",
            }
            path = "/api/observations"
        for _ in range(2):  # a retried delivery: stored once
            status, body = worker.request("POST", path, payload)
            assert status in (200, 201), (status, body)
        sent += 1
    return sent


def _stored(worker: WorkerProcess, sids: list[str]) -> tuple[int, int]:
    """(distinct events stored, rows stored) over these sessions, read through the API (as
    their author: on a team database prompts and observations are private to it)."""
    rows = 0
    keys: set[str] = set()
    for sid in sids:
        _, detail = worker.request("GET", f"/api/sessions/{sid}")
        for p in detail["prompts"]:
            keys.add(f"p:{p['text']}")
        for o in detail["observations"]:
            keys.add(f"o:{o['title']}")
        rows += len(detail["prompts"]) + len(detail["observations"])
    return len(keys), rows


def _load(workers: list[WorkerProcess], sessions: int, events: int) -> dict[str, float]:
    jobs = [(w, f"s-{uuid.uuid4().hex[:8]}") for w in workers for _ in range(sessions)]
    start = time.perf_counter()
    with ThreadPoolExecutor(len(jobs)) as pool:
        sent = sum(pool.map(lambda job: _session_events(job[0], job[1], events), jobs))
    took = time.perf_counter() - start
    distinct, rows = _stored(workers[0], [sid for _, sid in jobs])
    return {
        "sent": sent,
        "lost": sent - distinct,
        "duplicated": rows - distinct,
        "events_per_s": 2 * sent / took,  # every event was delivered twice
    }


def _feed_latency(a: WorkerProcess, b: WorkerProcess, repeats: int) -> list[float]:
    stream = b.events(timeout=30)
    seen: dict[int, float] = {}
    ready = threading.Event()

    def read() -> None:
        for event in stream:
            ready.set()
            if event.get("event") == "memory.created":
                seen[int(json.loads(event["data"])["id"])] = time.perf_counter()

    threading.Thread(target=read, daemon=True).start()
    a.request("POST", "/api/memories", {"project": PROJECT, "kind": "fact", "content": "warm-up"})
    ready.wait(10)
    out = []
    for i in range(repeats):
        start = time.perf_counter()
        _, row = a.request(
            "POST",
            "/api/memories",
            {
                "project": PROJECT,
                "kind": "decision",
                "content": f"Decision {i}: queue {uuid.uuid4().hex}",
            },
        )
        deadline = start + 10
        while int(row["id"]) not in seen and time.perf_counter() < deadline:
            time.sleep(0.002)
        out.append((seen.get(int(row["id"]), deadline) - start) * 1000)
    stream.close()
    return out


def _context(worker: WorkerProcess, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        status, _ = worker.request(
            "GET", f"/api/context?project={PROJECT}&query=which+queue+did+we+decide+on"
        )
        assert status == 200
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--sessions", type=int, default=2)
    ap.add_argument("--events", type=int, default=100)
    ap.add_argument("--feed", type=int, default=20)
    args = ap.parse_args()
    found = pg.find_binaries()
    if not found:
        sys.exit(pg.SKIP_REASON)
    server = pg.started(found[0])
    rows: list[Row] = []
    data: dict[str, Any] = {"args": vars(args)}
    try:
        with tempfile.TemporaryDirectory() as tmp, server.database() as url:
            root = Path(tmp)
            local = WorkerProcess(home=root / "solo" / ".cairn").start()
            try:
                solo = _load([local], args.sessions, args.events)
            finally:
                local.stop()
            team = [
                WorkerProcess(
                    home=root / f"w{i}" / ".cairn",
                    env_extra={"CAIRN_DATABASE_URL": url, "CAIRN_AUTHOR": "bench@acme.dev"},
                ).start()
                for i in range(args.workers)
            ]
            try:
                shared = _load(team, args.sessions, args.events)
                feed = _feed_latency(team[0], team[1], args.feed)
                context = _context(team[1], 50)
            finally:
                for w in team:
                    w.stop()
        data.update(sqlite=solo, postgres=shared, feed_ms=feed, context_ms=context)
        n = f"{args.workers} workers x {args.sessions} sessions"
        rows += [
            (f"SQLite, 1 worker x {args.sessions} sessions: lost / duplicated", f"{solo['lost']} / {solo['duplicated']}", "0 / 0", solo["lost"] == solo["duplicated"] == 0),
            ("SQLite: hook events/s (incl. retries)", round(solo["events_per_s"], 1), "", None),
            (f"PostgreSQL, {n}: lost / duplicated", f"{shared['lost']} / {shared['duplicated']}", "0 / 0", shared["lost"] == shared["duplicated"] == 0),
            ("PostgreSQL: hook events/s (incl. retries)", round(shared["events_per_s"], 1), "", None),
            ("teammate's decision in another worker's feed p50 (ms)", round(percentile(feed, 50), 1), "", None),
            ("teammate's decision in another worker's feed p95 (ms)", round(percentile(feed, 95), 1), "< 1000", percentile(feed, 95) < 1000),
            ("prompt context on a team worker p50 / p95 (ms)", f"{percentile(context, 50):.1f} / {percentile(context, 95):.1f}", "", None),
        ]  # fmt: skip
    finally:
        server.stop()
    report("team", "Team memory: workers on one PostgreSQL vs one worker on SQLite", rows, data)


if __name__ == "__main__":
    main()
