"""A silent team database and what the agent pays for it: real hook processes (PostToolUse, one
process per event, as Claude Code runs them) against a real worker on a throwaway PostgreSQL, first
answering, then with every server process stopped (SIGSTOP: the kernel accepts connections,
nothing answers, as a host gone dark), then resumed (SIGCONT).

Figures: each hook's wall time (process start to exit) while the database answers and while it
is silent (p50, p95, max), how many hooks waited out their request budget (0.8 s) and how many
the worker answered 503 at once, the seconds from SIGCONT until the spool is replayed, and every
event stored exactly once.

    python bench/team_silent.py [--events 20]

Without the worker's circuit breaker (worker/store/pg/breaker.py) every silent hook waits its
whole budget: run this file from a checkout without it to see that.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Row, percentile, report
from tests import pg
from tests.e2e.hook_sessions import (
    drain_spool,
    hook_env,
    marker_counts,
    run_hook,
    start_payload,
    tool_payload,
)
from tests.e2e.team_checkout import checkout
from tests.e2e.worker_process import WorkerProcess

BUDGET_S = 0.8  # the hook's request timeout for PostToolUse (hooks/cairn_hook_run.py)
SESSION = "bench-silent"


def _status(worker: WorkerProcess) -> dict[str, Any]:
    status, body = worker.request("GET", "/api/status", timeout=30)
    assert status == 200, body
    return dict(body)


def _wait(predicate: Any, timeout: float = 30.0) -> float | None:
    """Seconds until `predicate()` held (polled every 20 ms); None past `timeout`."""
    t0 = time.perf_counter()
    while not predicate():
        if time.perf_counter() - t0 > timeout:
            return None
        time.sleep(0.02)
    return time.perf_counter() - t0


def _run(root: Path, server: pg.PostgresServer, url: str, events: int) -> dict[str, Any]:
    worker = WorkerProcess(
        home=root / ".cairn",
        env_extra={
            "CAIRN_DATABASE_URL": url,
            "CAIRN_AUTHOR": "bench@acme.dev",
            "CAIRN_SPOOL_REPLAY_SECONDS": "3600",  # only the database's return replays
        },
    ).start()
    try:
        repo = checkout(root / "work" / "app", "bench@acme.dev")
        env = hook_env(worker.home, CAIRN_AUTOSTART="0", CAIRN_DATABASE_URL=url)
        run_hook("session-start", start_payload(SESSION, repo), env)

        def hooks(first: int) -> list[float]:
            runs = [
                run_hook("post-tool-use", tool_payload(SESSION, repo, i), env)
                for i in range(first, first + events)
            ]
            assert all(r.exit_code == 0 for r in runs), [r.stderr for r in runs]
            return [r.seconds for r in runs]

        answering = hooks(0)
        server.freeze()
        try:
            silent = hooks(events)
            breaker = _status(worker)["database"].get("breaker")
        finally:
            server.thaw()
        replay_s = _wait(lambda: _status(worker)["services"]["spool"]["waiting_events"] == 0)
        if replay_s is None:  # not by itself (a worker without the breaker waits its period)
            drain_spool(worker)
        counts = marker_counts(worker, SESSION)
        log = (worker.home / "logs" / "hooks.log").read_text()
    finally:
        worker.stop()
    return {
        "answering_s": answering,
        "silent_s": silent,
        "waited_budget": log.count("worker unavailable"),
        "answered_503": log.count("answered 503"),
        "breaker": breaker,
        "replay_after_sigcont_s": None if replay_s is None else round(replay_s, 2),
        "stored": len(counts),
        "duplicated": sum(1 for n in counts.values() if n != 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=20, help="hooks while answering, and silent")
    args = ap.parse_args()
    found = pg.find_binaries()
    if not found:
        sys.exit(pg.SKIP_REASON)
    server = pg.started(found[0])
    try:
        with tempfile.TemporaryDirectory() as tmp, server.database() as url:
            r = _run(Path(tmp), server, url, args.events)
    finally:
        server.stop()
    ok, silent, total = r["answering_s"], r["silent_s"], 2 * args.events
    exact = r["stored"] == total and r["duplicated"] == 0
    ms = 1000
    rows: list[Row] = [
        ("hook wall time, database answering: p50 / p95 (ms)", f"{percentile(ok, 50) * ms:.0f} / {percentile(ok, 95) * ms:.0f}", "", None),
        ("hook wall time, database silent: p50 (ms)", round(percentile(silent, 50) * ms), f"< {BUDGET_S * ms / 2:.0f} (half the budget)", percentile(silent, 50) < BUDGET_S / 2),
        ("hook wall time, database silent: p95 / max (ms)", f"{percentile(silent, 95) * ms:.0f} / {max(silent) * ms:.0f}", "", None),
        ("silent: hooks that waited out their budget", r["waited_budget"], "<= 2", r["waited_budget"] <= 2),
        ("silent: hooks answered 503 at once (spooled)", r["answered_503"], "", None),
        ("spool replayed by itself after SIGCONT (s)", r["replay_after_sigcont_s"] or "not in 30 s", "", None),
        ("events stored exactly once", f"{r['stored']} of {total}", "all", exact),
    ]  # fmt: skip
    report(
        "team_silent",
        f"Team database silent (SIGSTOP): {args.events} hooks answering, {args.events} silent",
        rows,
        {"args": vars(args), **r},
    )


if __name__ == "__main__":
    main()
