"""Integrations figures: `cairn install`/`uninstall`/`doctor` wall time, `cairn mcp` cold start and
MCP tool-call latency next to the same request made straight over HTTP (the MCP overhead), and
the start time of CLI commands (`--help`, `status`, `doctor`, the MCP server's import).

Run: `.venv/bin/python bench/integrations.py` (`--quick` for fewer rounds; `--before DIR` also
times the CLI start of another checkout, e.g. `git archive <commit> | tar -x -C DIR`).
Writes bench/results/integrations.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from bench.common import percentile, print_table, write_result  # noqa: E402
from tests.e2e.worker_process import WorkerProcess  # noqa: E402

SETTINGS = {
    "model": "opus",
    "permissions": {"allow": [f"Bash(tool-{i})" for i in range(50)]},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}
        ]
    },
}


def timed(cmd: list[str], env: dict[str, str], cwd: Path, *, check: bool = True) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=check, capture_output=True, timeout=120)
    return (time.perf_counter() - start) * 1000


def cli_figures(rounds: int, base_env: dict[str, str], tmp: Path) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {
        "python_bare": [],
        "install": [],
        "install_again": [],
        "uninstall": [],
        "doctor": [],
    }
    cli = [sys.executable, "-m", "worker"]
    for n in range(rounds):
        home = tmp / f"home-{n}"
        (home / ".claude").mkdir(parents=True)
        (home / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n")
        env = {**base_env, "HOME": str(home), "CAIRN_HOME": str(tmp / f"cairn-{n}")}
        samples["python_bare"].append(timed([sys.executable, "-c", "pass"], env, tmp))
        samples["install"].append(timed([*cli, "install", "--no-start"], env, tmp))
        samples["install_again"].append(timed([*cli, "install", "--no-start"], env, tmp))
        # Exit code 1 here: the worker is down on purpose (this times the checks, not a pass).
        samples["doctor"].append(timed([*cli, "doctor"], env, tmp, check=False))
        samples["uninstall"].append(timed([*cli, "uninstall"], env, tmp))
    return samples


START_COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "cairn --help": ["-m", "worker", "--help"],
    "cairn status (worker down)": ["-m", "worker", "status"],
    "cairn doctor (worker down)": ["-m", "worker", "doctor"],
    "import worker.mcp_server (cairn mcp)": ["-c", "import worker.mcp_server"],
}


def start_figures(
    rounds: int, base_env: dict[str, str], tmp: Path, trees: dict[str, Path | None]
) -> dict[str, dict[str, list[float]]]:
    """Wall time of each command in START_COMMANDS for each tree (None: this checkout; else a
    checkout whose `worker` package goes first on PYTHONPATH), interleaved over `rounds` rounds
    so a change in machine load hits every tree alike."""
    from worker.store import Store

    envs: dict[str, dict[str, str]] = {}
    for label, tree in trees.items():
        home = tmp / f"start-{label}"
        # As installed: bytecode is written on the first run and read after it (a sandbox's
        # PYTHONDONTWRITEBYTECODE would time compiling every module from source instead).
        envs[label] = {
            **{k: v for k, v in base_env.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "HOME": str(home),
            "CAIRN_HOME": str(home / ".cairn"),
            "CAIRN_PORT": "1",
            **({"PYTHONPATH": str(tree)} if tree is not None else {}),
        }
        store = Store(home / ".cairn" / "cairn.db")  # doctor checks a real database file
        store.open()
        store.close()
    samples = {label: {name: [] for name in START_COMMANDS} for label in trees}
    for label in trees:  # warm-up: writes the bytecode, fills the OS file cache
        for argv in START_COMMANDS.values():
            timed([sys.executable, *argv], envs[label], tmp, check=False)
    for _ in range(rounds):
        for name, argv in START_COMMANDS.items():
            for label in trees:
                cmd = [sys.executable, *argv]
                samples[label][name].append(timed(cmd, envs[label], tmp, check=False))
    return samples


def http_get(worker: WorkerProcess, path: str) -> float:
    req = urllib.request.Request(worker.url + path)
    req.add_header("Authorization", f"Bearer {worker.token}")
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()
    return (time.perf_counter() - start) * 1000


async def mcp_figures(worker: WorkerProcess, project: Path, calls: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update(
        {"CAIRN_HOME": str(worker.home), "CAIRN_EMBED_ENABLED": "0", "CAIRN_PROJECT": str(project)}
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "worker", "mcp"], env=env)
    cold: list[float] = []
    tool: dict[str, list[float]] = {"get_observations": [], "search": [], "timeline": []}
    with open(os.devnull, "w") as devnull:
        for attempt in range(3):
            start = time.perf_counter()
            async with (
                stdio_client(params, errlog=devnull) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                cold.append((time.perf_counter() - start) * 1000)
                if attempt:
                    continue
                args = {
                    "get_observations": {"ids": [1, 2, 3]},
                    "search": {"query": "parser cache failure"},
                    "timeline": {"anchor_id": 50, "before": 5, "after": 5},
                }
                for name, arguments in args.items():
                    for _ in range(calls):
                        t0 = time.perf_counter()
                        result = await session.call_tool(name, arguments)
                        tool[name].append((time.perf_counter() - t0) * 1000)
                        assert not result.is_error, result
    return {"cold": cold, "tool": tool}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--before", type=Path, help="a checkout to time the CLI start of too")
    parser.add_argument("--start-only", action="store_true", help="only the CLI start table")
    args = parser.parse_args()
    rounds, calls = (3, 20) if args.quick else (7, 60)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    base_env["CAIRN_EMBED_ENABLED"] = "0"
    start_rounds = 5 if args.quick else 15
    trees: dict[str, Path | None] = {"after": None}
    if args.before:
        trees["before"] = args.before
    with tempfile.TemporaryDirectory() as tmp_name:
        timings = start_figures(start_rounds, base_env, Path(tmp_name), trees)
    start, before = timings["after"], timings.get("before", {})
    start_rows: list[tuple[str, Any, str, bool | None]] = []
    for name, samples in start.items():
        p50 = statistics.median(samples)
        aim = "< 150" if name.startswith(("cairn --help", "cairn status", "cairn doctor")) else ""
        if before:
            start_rows.append((f"{name}, ms p50 before", statistics.median(before[name]), "", None))
        start_rows.append((f"{name}, ms p50", p50, aim, p50 < 150 if aim else None))
    print_table(f"CLI start time (median of {start_rounds} runs)", start_rows)
    start_result = {
        "rounds": start_rounds,
        "after_ms": {k: {"p50": statistics.median(v), "samples": v} for k, v in start.items()},
        "before_ms": {k: {"p50": statistics.median(v), "samples": v} for k, v in before.items()},
    }
    if args.start_only:
        write_result("cli_start", start_result)
        return 0
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cli = cli_figures(rounds, base_env, tmp)
        home = tmp / "worker-home"
        project = tmp / "repo"
        (project / ".git").mkdir(parents=True)
        worker = WorkerProcess(home=home).start()
        try:
            words = ["parser", "cache", "failure", "sqlite", "hook", "retry", "index", "token"]
            batch = [
                {
                    "project": str(project),
                    "type": "command",
                    "title": f"run {words[i % 8]} {words[(i * 3) % 8]} step {i}",
                    "body": f"{words[(i * 5) % 8]} output line {i}",
                }
                for i in range(500)
            ]
            worker.request("POST", "/api/observations", {"observations": batch})
            direct = {
                "get_observations": [
                    http_get(worker, "/api/observations?ids=1,2,3") for _ in range(calls)
                ],
                "search": [
                    http_get(
                        worker, f"/api/search?q=parser+cache+failure&project={project}&limit=10"
                    )
                    for _ in range(calls)
                ],
            }
            mcp = anyio.run(mcp_figures, worker, project, calls)
        finally:
            worker.stop()

    med = statistics.median
    bare = med(cli["python_bare"])
    rows: list[tuple[str, Any, str, bool | None]] = [
        ("python -c pass, ms (p50)", bare, "", None),
        ("cairn install, first run, ms (p50)", med(cli["install"]), "", None),
        ("cairn install, idempotent re-run, ms (p50)", med(cli["install_again"]), "", None),
        ("cairn uninstall, ms (p50)", med(cli["uninstall"]), "", None),
        ("cairn doctor (worker down), ms (p50)", med(cli["doctor"]), "", None),
        ("cairn mcp cold start to tool list, ms (p50)", med(mcp["cold"]), "", None),
    ]
    figures: dict[str, Any] = {}
    for name, samples in mcp["tool"].items():
        p50, p95 = percentile(samples, 50), percentile(samples, 95)
        rows.append((f"MCP {name}, ms p50", p50, "", None))
        rows.append((f"MCP {name}, ms p95", p95, "", None))
        figures[name] = {"p50": p50, "p95": p95}
        if name in direct:
            http50 = percentile(direct[name], 50)
            rows.append(("  same request over HTTP, ms p50", http50, "", None))
            rows.append(("  MCP/HTTP ratio (p50)", round(p50 / http50, 2), "", None))
            figures[name]["http_p50"] = http50
    print_table("Integrations (install, doctor, MCP)", rows)
    write_result(
        "integrations",
        {
            "rounds": rounds,
            "calls": calls,
            "cli_ms": {k: {"p50": med(v), "samples": v} for k, v in cli.items()},
            "mcp_cold_start_ms": mcp["cold"],
            "mcp_tools_ms": figures,
            "cli_start": start_result,
            "figures": [{"figure": r[0], "value": r[1], "aim": r[2], "met": r[3]} for r in rows],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
