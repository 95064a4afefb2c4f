"""Hook latency: wall-clock per real hook process, next to a bare interpreter start.

Figures (issue 3): per-event p50/p95 with a warm worker beside `python -c pass` on the same
interpreter in the same run; PostToolUse p50 ratio to the bare start (aim <= 1.5x) and p95
(aim < 40 ms); SessionStart with context p95 (aim < 150 ms); cold start (worker down) to
injected context (aim < 3 s); PostToolUse with the worker down (spool path).
Run: `.venv/bin/python bench/hooks.py` (`--quick` for fewer runs, `--no-embed` for keyword-only
context). Writes bench/results/hooks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import percentile, print_table, write_result  # noqa: E402
from tests.e2e.worker_process import WorkerProcess, free_port  # noqa: E402

HOOK = ROOT / "hooks" / "cairn_hook.py"
PYTHON = sys.executable


CPU: dict[str, list[float]] = {}


def timed(
    argv: list[str], stdin: bytes, env: dict[str, str], label: str = ""
) -> tuple[float, bytes]:
    """Wall-clock ms of one process run (and its CPU ms, user + system, kept under `label`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=60)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if label:
        cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        CPU.setdefault(label, []).append(cpu)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stderr[-500:]!r}")
    return elapsed, proc.stdout


def hook_env(home: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"CAIRN_HOME": str(home), "CAIRN_PORT": str(port), **extra})
    return env


def payloads(project: Path, session: str) -> dict[str, list[dict[str, Any]]]:
    common = {
        "session_id": session,
        "transcript_path": str(project / "t.jsonl"),
        "cwd": str(project / "src"),
        "permission_mode": "default",
    }
    src = str(project / "src")
    tools = [
        (
            "Read",
            {"file_path": f"{src}/cart.py"},
            {"type": "text", "file": {"content": "x" * 4000}},
        ),
        (
            "Bash",
            {"command": "pytest -q tests/test_cart.py", "description": "Run the cart tests"},
            {"stdout": "\n".join(f"test_{i} PASSED" for i in range(200)), "stderr": ""},
        ),
        (
            "Edit",
            {
                "file_path": f"{src}/cart.py",
                "old_string": "def total(items):\n    return 0\n",
                "new_string": "def total(items):\n    return sum(i.price for i in items)\n",
            },
            {"filePath": f"{src}/cart.py"},
        ),
        (
            "Grep",
            {"pattern": "def checkout", "path": src},
            {"mode": "files_with_matches", "filenames": [f"{src}/cart.py"], "numFiles": 1},
        ),
    ]
    post = [
        {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": tool,
            "tool_input": tin,
            "tool_response": resp,
            "tool_use_id": f"toolu_{tool}",
        }
        for tool, tin, resp in tools
    ]
    return {
        "PostToolUse": post,
        "UserPromptSubmit": [
            {
                **common,
                "hook_event_name": "UserPromptSubmit",
                "prompt": "How does checkout compute the cart total with discounts?",
            }
        ],
        "SessionStart": [{**common, "hook_event_name": "SessionStart", "source": "startup"}],
        "Stop": [{**common, "hook_event_name": "Stop", "stop_hook_active": False}],
        "PreCompact": [
            {
                **common,
                "hook_event_name": "PreCompact",
                "trigger": "auto",
                "custom_instructions": "",
            }
        ],
        "SessionEnd": [{**common, "hook_event_name": "SessionEnd", "reason": "other"}],
    }


def unique(payload: dict[str, Any], i: int) -> bytes:
    """Each run its own tool_use_id, so every post is a real insert, not a duplicate."""
    p = dict(payload)
    if "tool_use_id" in p:
        p["tool_use_id"] = f"{p['tool_use_id']}_{i}"
    return json.dumps(p).encode()


def seed(worker: WorkerProcess, project: Path, n: int) -> None:
    topics = [
        "cart total",
        "discount codes",
        "checkout flow",
        "tax rules",
        "refunds",
        "sqlite lock",
    ]
    items = [
        {
            "project": str(project),
            "session_id": "seed",
            "type": "command" if i % 3 else "file_write",
            "title": f"Work on {topics[i % len(topics)]} step {i}",
            "body": f"Changed the {topics[i % len(topics)]} logic in src/mod{i % 20}.py",
            "files": [f"src/mod{i % 20}.py"],
            "event_id": f"seed-{i}",
        }
        for i in range(n)
    ]
    for start in range(0, n, 500):
        status, _ = worker.request(
            "POST", "/api/observations", {"observations": items[start : start + 500]}
        )
        assert status in (200, 201), status
    worker.request(
        "POST",
        "/api/memories",
        {
            "kind": "decision",
            "content": "Cart totals use Decimal, never float.",
            "scope": "project",
            "project": str(project),
            "pinned": True,
        },
    )


def wait_embedded(worker: WorkerProcess, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    status: Any = None
    while time.monotonic() < deadline:
        code, status = worker.request("GET", "/api/embeddings/stats")
        if code != 200:
            return "n/a"
        if status.get("coverage", 0) >= 1 and not status.get("queue_depth"):
            return str(status.get("status", "ready"))
        time.sleep(0.25)
    return f"timeout ({status})"


def stop_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    return
        except (ProcessLookupError, OSError):
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-embed", action="store_true")
    args = parser.parse_args()
    runs = 20 if args.quick else 60
    rows: list[tuple[str, Any, str, bool | None]] = []
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "runs": runs,
        "embeddings": not args.no_embed,
    }
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-hooks-"))
    try:
        home = tmp / "home"
        project = tmp / "shop"
        (project / ".git").mkdir(parents=True)
        (project / "src").mkdir()
        (project / "t.jsonl").write_text("{}\n")
        worker = WorkerProcess(
            home=home, env_extra={"CAIRN_EMBED_ENABLED": "0" if args.no_embed else "1"}
        )
        worker.start()
        try:
            seed(worker, project, 300)
            result["embedding_status"] = "off" if args.no_embed else wait_embedded(worker)
            env = hook_env(home, worker.port)
            events = payloads(project, "bench-session")
            samples: dict[str, list[float]] = {"bare": [], **{event: [] for event in events}}
            hits = dict.fromkeys(events, 0)
            # Interleaved rounds: the bare start and every hook see the same machine load.
            for i in range(runs):
                samples["bare"].append(timed([PYTHON, "-c", "pass"], b"", env, "bare")[0])
                for event, items in events.items():
                    ms, out = timed(
                        [PYTHON, str(HOOK), event], unique(items[i % len(items)], i), env, event
                    )
                    samples[event].append(ms)
                    hits[event] += bool(out.strip())
            bare = samples.pop("bare")
            bare_p50, bare_p95 = percentile(bare, 50), percentile(bare, 95)
            result["bare_python_ms"] = {"p50": bare_p50, "p95": bare_p95}
            rows.append(("bare `python -c pass` p50 ms", bare_p50, "", None))
            per_event = {
                event: {"p50": percentile(values, 50), "p95": percentile(values, 95)}
                for event, values in samples.items()
            }
            injected = hits
            result["warm_ms"] = per_event
            result["injected_runs"] = injected
            post = per_event["PostToolUse"]
            ratio = post["p50"] / bare_p50 if bare_p50 else 0.0
            result["post_tool_use_ratio_to_bare"] = ratio
            for event, stats in per_event.items():
                rows.append((f"{event} p50 ms", stats["p50"], "", None))
                rows.append((f"{event} p95 ms", stats["p95"], "", None))
            rows.append(("PostToolUse p50 / bare p50", ratio, "<= 1.5x", ratio <= 1.5))
            rows.append(("PostToolUse p95 ms", post["p95"], "< 40 ms", post["p95"] < 40))
            # CPU time (user + system) of each process: what the hook itself costs, load aside.
            cpu = {label: percentile(values, 50) for label, values in CPU.items()}
            result["cpu_ms_p50"] = cpu
            rows.append(("bare CPU p50 ms", cpu["bare"], "", None))
            rows.append(("PostToolUse CPU p50 ms", cpu["PostToolUse"], "", None))
            rows.append(
                (
                    "PostToolUse CPU p50 / bare CPU p50",
                    cpu["PostToolUse"] / cpu["bare"] if cpu["bare"] else 0.0,
                    "",
                    None,
                )
            )
            start_p95 = per_event["SessionStart"]["p95"]
            rows.append(
                (
                    f"SessionStart with context p95 ms ({injected['SessionStart']}/{runs} injected)",
                    start_p95,
                    "< 150 ms",
                    start_p95 < 150 and injected["SessionStart"] == runs,
                )
            )
        finally:
            worker.stop()

        # Worker down, no auto-start: the event goes to the spool.
        env_down = hook_env(home, free_port(), CAIRN_AUTOSTART="0")
        (home / "worker.json").unlink(missing_ok=True)
        spool = [
            timed(
                [PYTHON, str(HOOK), "PostToolUse"],
                unique(payloads(project, "down")["PostToolUse"][1], i),
                env_down,
            )[0]
            for i in range(runs)
        ]
        result["spool_ms"] = {"p50": percentile(spool, 50), "p95": percentile(spool, 95)}
        rows.append(
            ("PostToolUse, worker down (spooled) p50 ms", result["spool_ms"]["p50"], "", None)
        )
        shutil.rmtree(home / "spool", ignore_errors=True)

        # Cold start: worker down, SessionStart starts it and injects the context.
        cold: list[float] = []
        cold_injected = 0
        for i in range(1 if args.quick else 3):
            port = free_port()
            env_cold = hook_env(home, port, CAIRN_EMBED_ENABLED="0" if args.no_embed else "1")
            payload = payloads(project, f"cold-{i}")["SessionStart"][0]
            ms, out = timed(
                [PYTHON, str(HOOK), "SessionStart"], json.dumps(payload).encode(), env_cold
            )
            cold.append(ms)
            cold_injected += bool(out.strip())
            info = (
                json.loads((home / "worker.json").read_text())
                if (home / "worker.json").exists()
                else None
            )
            spawned = json.loads((home / "spawn.json").read_text())
            stop_pid(int((info or spawned)["pid"]))
            (home / "spawn.json").unlink(missing_ok=True)
        result["cold_start_ms"] = cold
        cold_median = sorted(cold)[len(cold) // 2]
        rows.append(
            (
                f"cold start to injected context ms ({cold_injected}/{len(cold)} injected)",
                cold_median,
                "< 3000 ms",
                cold_median < 3000 and cold_injected == len(cold),
            )
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["figures"] = [
        {"figure": name, "value": value, "aim": aim, "met": met} for name, value, aim, met in rows
    ]
    print_table("Hook latency (real hook processes, warm worker unless said)", rows)
    write_result("hooks", result)


if __name__ == "__main__":
    main()
