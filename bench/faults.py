"""Crash safety at full size: 8 sessions of real hook processes post 10,000 PostToolUse events
with unique ids while the worker is killed with SIGKILL at 5 random moments (restarted each
time; hooks spool meanwhile). After the spool replay, every event must be stored exactly once.
`--quick` (or CAIRN_BENCH_QUICK=1): 8 x 100 events. Writes bench/results/faults.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import report  # noqa: E402
from tests.e2e.fault_scenario import run_kill_scenario  # noqa: E402


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    quick = args.quick or os.environ.get("CAIRN_BENCH_QUICK") == "1"
    events = 100 if quick else 1250
    with tempfile.TemporaryDirectory(prefix="cairn-faults-") as tmp:
        result = run_kill_scenario(
            Path(tmp) / "cairn-home", seed=args.seed, sessions=8, events=events, kills=5
        )
    r = result.as_dict()
    exact = r["lost"] == 0 and r["duplicated"] == 0 and r["stored"] == r["events"]
    rows = [
        ("events posted by real hooks", r["events"], "", None),
        ("kill -9 moments (s)", ", ".join(str(k) for k in r["kills"]), "", None),
        ("stored exactly once", f"{r['stored']} of {r['events']}", "all", exact),
        ("lost / duplicated", f"{r['lost']} / {r['duplicated']}", "0 / 0", exact),
        ("replayed from the spool", r["replayed"], "", None),
        ("hooks exiting non-zero", r["nonzero_exits"], "0", r["nonzero_exits"] == 0),
        ("wall seconds", r["seconds"], "", None),
    ]
    return report(
        "faults",
        f"Faults: 8 x {events} events, {len(r['kills'])} x kill -9",
        rows,
        {"quick": quick, **r},
    )


if __name__ == "__main__":
    main()
