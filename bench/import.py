"""`cairn import claude-code` throughput on a generated history (issue 21).

Writes SESSIONS transcripts of ~EVENTS_PER_SESSION tool calls each (Bash, Read, Edit, Grep, with a
prompt every 10 calls) in the shape the real CLI writes, imports them into a fresh CAIRN_HOME
through a real worker (keyword-only: embedding follows at the embedder's own rate), and reports
events/s to stored and keyword-searchable, and the peak RSS of the importing process and of the
worker.

  .venv/bin/python bench/import.py [--sessions 1000] [--events 100]   (CAIRN_BENCH_QUICK=1: 100)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import print_table, write_result


def line(kind: str, sid: str, cwd: str, at: str, content: object, **extra: object) -> str:
    role = "assistant" if kind == "assistant" else "user"
    record = {
        "type": kind,
        "sessionId": sid,
        "cwd": cwd,
        "timestamp": at,
        "uuid": f"{sid}-{extra.pop('n', 0)}-{kind}",
        "message": {"role": role, "content": content},
        **extra,
    }
    return json.dumps(record) + "\n"


def generate(root: Path, sessions: int, per_session: int) -> int:
    events = 0
    for s in range(sessions):
        project = f"/tmp/bench-project-{s % 20}"
        folder = root / project.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        sid = f"00000000-0000-4000-8000-{s:012d}"
        out = []
        for i in range(per_session):
            at = f"2026-0{1 + s % 9}-1{s % 10}T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
            if i % 10 == 0:
                out.append(
                    line(
                        "user",
                        sid,
                        project,
                        at,
                        f"task {s}-{i}: fix parser{s}x{i}",
                        promptId=f"p{s}-{i}",
                        n=i,
                    )
                )
                events += 1
            tid = f"toolu_{s}_{i}"
            tool, tin, result = [
                (
                    "Bash",
                    {"command": f"pytest tests/test_mod{i}.py -q"},
                    {
                        "stdout": f"{i} passed in 0.{i}s token{s}z{i}",
                        "stderr": "",
                        "interrupted": False,
                    },
                ),
                (
                    "Read",
                    {"file_path": f"{project}/src/mod{i}.py"},
                    {
                        "type": "text",
                        "file": {
                            "filePath": f"{project}/src/mod{i}.py",
                            "content": "x = 1\n" * 40,
                            "numLines": 40,
                        },
                    },
                ),
                (
                    "Edit",
                    {
                        "file_path": f"{project}/src/mod{i}.py",
                        "old_string": "x = 1",
                        "new_string": f"x = {i}",
                    },
                    {"filePath": f"{project}/src/mod{i}.py"},
                ),
                (
                    "Grep",
                    {"pattern": f"def handler{i}", "path": project},
                    {"mode": "files_with_matches", "filenames": [f"src/a{i}.py"], "numFiles": 1},
                ),
            ][i % 4]
            out.append(
                line(
                    "assistant",
                    sid,
                    project,
                    at,
                    [{"type": "tool_use", "id": tid, "name": tool, "input": tin}],
                    n=i,
                )
            )
            out.append(
                line(
                    "user",
                    sid,
                    project,
                    at,
                    [{"type": "tool_result", "tool_use_id": tid, "content": "ok"}],
                    toolUseResult=result,
                    promptId=f"p{s}-{i - i % 10}",
                    n=i,
                )
            )
            events += 1
        (folder / f"{sid}.jsonl").write_text("".join(out))
    return events


def worker_hwm_mb(home: Path) -> float | None:
    try:
        pid = json.loads((home / "worker.json").read_text())["pid"]
        for row in Path(f"/proc/{pid}/status").read_text().splitlines():
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
    except (OSError, ValueError, KeyError):
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (/proc/PID/stat), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    quick = os.environ.get("CAIRN_BENCH_QUICK") == "1"
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=100 if quick else 1000)
    parser.add_argument("--events", type=int, default=100)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-import-"))
    os.environ.update(CAIRN_HOME=str(tmp / "home"), CAIRN_EMBED_ENABLED="0")
    from worker.cli.imports import run_import
    from worker.client import request
    from worker.settings import load_settings
    from worker.spawn import spawn_detached, wait_healthy

    root = tmp / "projects"
    expected = generate(root, args.sessions, args.events)
    settings = load_settings()
    spawn_detached(settings)
    assert wait_healthy(settings, 60) is not None
    pid = int(json.loads((settings.home / "worker.json").read_text())["pid"])
    try:
        worker_cpu0, cpu0 = cpu_seconds(pid), own_cpu_seconds()
        started = time.perf_counter()
        totals = run_import(settings, quiet=True, root=str(root))
        probe = f"parser{args.sessions - 1}x0"
        found = request(settings, "GET", f"/api/search?q={probe}&mode=keyword")
        elapsed = time.perf_counter() - started
        cli_cpu = own_cpu_seconds() - cpu0
        worker_cpu1 = cpu_seconds(pid)
        worker_cpu = (
            worker_cpu1 - worker_cpu0
            if worker_cpu0 is not None and worker_cpu1 is not None
            else None
        )
        searchable = bool(found.get("hits"))
        worker_mb = worker_hwm_mb(settings.home)
    finally:
        os.kill(pid, signal.SIGTERM)
    rate = totals.events / elapsed
    cli_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        ("sessions", args.sessions, "", None),
        ("events generated (prompts + tool calls)", expected, "", None),
        ("requests sent", totals.events, "", None),
        ("stored", totals.stored, f"= {totals.events}", totals.stored == totals.events),
        ("events/s to stored and keyword-searchable", round(rate), ">= 5000", rate >= 5000),
        ("last item keyword-searchable", str(searchable), "True", searchable),
        # CPU time per event does not depend on what else the machine runs (rates do): with
        # reading and storing overlapped, events/s on idle cores ~ 1 / the larger of the two.
        (
            "CPU ms per 1,000 events, importing process",
            round(cli_cpu / totals.events * 1e6),
            "",
            None,
        ),
        (
            "CPU ms per 1,000 events, worker",
            round((worker_cpu or 0) / totals.events * 1e6),
            "",
            None,
        ),
        (
            "events/s on idle cores (1 / the busier side's CPU per event)",
            round(totals.events / max(cli_cpu, worker_cpu or 0)),
            ">= 5000",
            totals.events / max(cli_cpu, worker_cpu or 0) >= 5000,
        ),
        ("peak RSS, importing process (MB)", round(cli_mb), "< 300", cli_mb < 300),
        (
            "peak RSS, worker (MB)",
            round(worker_mb or 0),
            "< 300",
            None if worker_mb is None else worker_mb < 300,
        ),
    ]
    print_table("cairn import claude-code", rows)
    write_result(
        "import",
        {
            "sessions": args.sessions,
            "events": totals.events,
            "seconds": round(elapsed, 2),
            "cpu_seconds": {"importer": round(cli_cpu, 2), "worker": round(worker_cpu or 0, 2)},
            "figures": [{"figure": n, "value": v, "aim": a, "met": m} for n, v, a, m in rows],
        },
    )


if __name__ == "__main__":
    main()
