"""Load: 8 concurrent sessions x 1,000 real PostToolUse hook processes, 4 dashboard SSE clients
and a search every 100 ms against one real worker (embeddings on, as users run it).

Reports hook latency p50/p95, worker CPU and RSS, searches, and checks that nothing was lost and
every SSE client saw every event in order. `--quick` (or CAIRN_BENCH_QUICK=1): 8 x 100.
Writes bench/results/load.json.
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
from tests.e2e.load_scenario import run_load  # noqa: E402


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--events", type=int, help="hooks per session (default 1000)")
    parser.add_argument("--no-embed", action="store_true", help="keyword-only worker")
    args = parser.parse_args(argv)
    quick = args.quick or os.environ.get("CAIRN_BENCH_QUICK") == "1"
    events = args.events or (100 if quick else 1000)
    env = {"CAIRN_EMBED_ENABLED": "0" if args.no_embed else "1"}
    with tempfile.TemporaryDirectory(prefix="cairn-load-") as tmp:
        result = run_load(Path(tmp), sessions=8, events=events, sse_clients=4, env_extra=env)
    r = result.as_dict()
    ok = r["lost"] == 0 and r["duplicated"] == 0 and r["hook_nonzero_exits"] == 0
    sse_ok = not any(r["sse_missing"]) and not any(r["sse_out_of_order"])
    rows = [
        ("hooks run (8 sessions)", r["hooks"], "", None),
        ("events lost / duplicated", f"{r['lost']} / {r['duplicated']}", "0 / 0", ok),
        (
            "SSE clients missing / out of order",
            f"{sum(r['sse_missing'])} / {sum(r['sse_out_of_order'])}",
            "0 / 0",
            sse_ok,
        ),
        ("hook p50 ms (process, end to end)", r["hook_p50_ms"], "", None),
        (
            "hook p95 ms (process, end to end)",
            r["hook_p95_ms"],
            "< 1000 (PostToolUse budget)",
            r["hook_p95_ms"] < 1000,
        ),
        ("searches during the run", r["searches"], "", None),
        ("search p95 ms under load", r["search_p95_ms"], "", None),
        ("worker CPU % of one core", r["worker_cpu_percent"], "", None),
        (
            "worker RSS MiB (end / peak)",
            f"{r['worker_rss_mib']} / {r['worker_peak_rss_mib']}",
            "",
            None,
        ),
        ("wall seconds", r["seconds"], "", None),
    ]
    return report(
        "load",
        f"Load: 8 x {events} PostToolUse hooks + 4 SSE clients + search every 100 ms",
        rows,
        {"quick": quick, "embeddings": not args.no_embed, **r},
    )


if __name__ == "__main__":
    main()
