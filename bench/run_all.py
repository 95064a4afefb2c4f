"""`make bench`: run every bench/*.py, then write bench/results/latest.json and latest.md.

Each bench script prints its own table and writes bench/results/<name>.json (see bench/common.py
for the "figures" list the report reads). This driver adds the machine (CPU, cores, memory, OS),
the versions (Python, SQLite, key libraries) and, per figure, its aim and whether it is met.

  .venv/bin/python bench/run_all.py                 # everything (full sizes)
  .venv/bin/python bench/run_all.py --only api,hooks
  .venv/bin/python bench/run_all.py --quick         # CAIRN_BENCH_QUICK=1: smaller runs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
# Modules the scripts share, and a trainer that needs recorded runs as its input.
NOT_BENCHES = {
    "run_all",
    "common",
    "__init__",
    "padding",
    "logistic_fit",
    "supersession_features",
    "train_relevance",
}
PACKAGES = (
    "cairn",
    "starlette",
    "uvicorn",
    "sse-starlette",
    "slowapi",
    "fastembed",
    "onnxruntime",
    "numpy",
    "snowballstemmer",
    "httptools",
    "uvloop",
)


def benches() -> list[str]:
    return sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in NOT_BENCHES)


def hardware() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib: float | None = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    load: list[float] | None = None
    with contextlib.suppress(OSError):
        load = [round(x, 2) for x in os.getloadavg()]
    return {
        # Figures from a busy machine are not comparable: the load at the start is recorded.
        "load_average_at_start": load,
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory_gib,
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
    }


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _flatten(prefix: str, value: Any, out: list[dict[str, Any]]) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        out.append({"figure": prefix, "value": value, "aim": "", "met": None})
    elif isinstance(value, dict):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)


def figures_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    figures = result.get("figures")
    if isinstance(figures, list) and all(isinstance(f, dict) for f in figures):
        return [
            {
                "figure": str(f.get("figure", "?")),
                "value": f.get("value"),
                "aim": str(f.get("aim") or ""),
                "met": f.get("met") if isinstance(f.get("met"), bool) else None,
            }
            for f in figures
        ]
    out: list[dict[str, Any]] = []
    _flatten("", {k: v for k, v in result.items() if k != "name"}, out)
    return out


def run_one(name: str, quick: bool, timeout: float) -> dict[str, Any]:
    script = BENCH / f"{name}.py"
    result_path = RESULTS / f"{name}.json"
    started = time.time()
    env = dict(os.environ)
    if quick:
        env["CAIRN_BENCH_QUICK"] = "1"
    print(f"\n=== bench/{name}.py", flush=True)
    try:
        proc = subprocess.run(
            [sys.executable, str(script)], cwd=ROOT, env=env, timeout=timeout, check=False
        )
        code: int | None = proc.returncode
        error = "" if code == 0 else f"exit code {code}"
    except subprocess.TimeoutExpired:
        code, error = None, f"timed out after {timeout:.0f}s"
    seconds = round(time.time() - started, 1)
    entry: dict[str, Any] = {"name": name, "ok": False, "seconds": seconds, "figures": []}
    if result_path.exists() and result_path.stat().st_mtime >= started:
        try:
            result = json.loads(result_path.read_text())
            entry["figures"] = figures_of(result)
            entry["ok"] = code == 0
        except ValueError as exc:
            error = error or f"unreadable result: {exc}"
    else:
        error = error or f"wrote no bench/results/{name}.json"
    if error:
        entry["error"] = error
    return entry


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def markdown(report: dict[str, Any]) -> str:
    hw, ver = report["hardware"], report["versions"]
    lines = [
        "# Cairn benchmark report",
        "",
        f"Generated {report['generated_at']} by `make bench` (bench/run_all.py)"
        + (" with --quick (smaller sizes)" if report["quick"] else "")
        + ".",
        "",
        f"- Machine: {hw['cpu']}, {hw['cores']} cores, {hw['memory_gib']} GiB, {hw['os']}"
        f" (load average at start: {hw['load_average_at_start']})",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in ver.items()),
        "",
        "| bench | figure | value | aim | met |",
        "| --- | --- | --- | --- | --- |",
    ]
    for bench in report["benches"]:
        if not bench["figures"]:
            lines.append(f"| {bench['name']} | (no figures) | {bench.get('error', '')} | | |")
        for fig in bench["figures"]:
            met = "" if fig["met"] is None else ("yes" if fig["met"] else "**no**")
            lines.append(
                f"| {bench['name']} | {fig['figure']} | {_cell(fig['value'])} | "
                f"{_cell(fig['aim'])} | {met} |"
            )
    failed = [b for b in report["benches"] if not b["ok"]]
    if failed:
        lines += ["", "Failed or incomplete:"]
        lines += [f"- {b['name']}: {b.get('error', 'failed')}" for b in failed]
    summary = report["summary"]
    lines += [
        "",
        f"Aims met: {summary['met']} of {summary['with_aim']} figures that have one.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated bench names (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller runs (CAIRN_BENCH_QUICK=1)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per bench")
    args = parser.parse_args(argv)
    names = benches()
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            parser.error(f"unknown bench(es): {', '.join(unknown)}; have: {', '.join(names)}")
        names = wanted
    RESULTS.mkdir(parents=True, exist_ok=True)
    machine = hardware()  # before the benches load the machine themselves
    entries = [run_one(name, args.quick, args.timeout) for name in names]
    with_aim = [f for e in entries for f in e["figures"] if f["met"] is not None]
    report = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "quick": args.quick,
        "hardware": machine,
        "versions": versions(),
        "benches": entries,
        "summary": {
            "benches": len(entries),
            "failed": [e["name"] for e in entries if not e["ok"]],
            "with_aim": len(with_aim),
            "met": sum(1 for f in with_aim if f["met"]),
        },
    }
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    (RESULTS / "latest.md").write_text(markdown(report))
    print(f"\n{markdown(report)}")
    print("wrote bench/results/latest.json and bench/results/latest.md")
    return 0 if not report["summary"]["failed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
