"""Helpers shared by the bench scripts: percentiles, the printed table, the JSON result.

A bench script `bench/<name>.py` prints a table and writes `bench/results/<name>.json`. For the
report (`make bench` -> bench/run_all.py) the JSON should carry a list
`"figures": [{"figure": str, "value": number|str, "aim": str, "met": bool|None}, ...]`;
results without it are still reported (their numeric fields are listed without an aim).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

Row = tuple[str, Any, str, "bool | None"]


def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (0 for no samples)."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _met(met: bool | None) -> str:
    return "" if met is None else ("yes" if met else "NO")


def print_table(title: str, rows: Sequence[Row]) -> None:
    header = ("figure", "value", "aim", "met")
    cells = [header, *[(name, _cell(v), aim, _met(met)) for name, v, aim, met in rows]]
    widths = [max(len(str(row[i])) for row in cells) for i in range(4)]
    print(f"\n{title}")
    for n, row in enumerate(cells):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def write_result(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {path.relative_to(RESULTS.parent.parent)}")
    return path


def report(
    name: str, title: str, rows: Sequence[Row], data: dict[str, Any], *, write: bool = True
) -> dict[str, Any]:
    """Print the table and write bench/results/<name>.json: `data` plus the figures list."""
    print_table(title, rows)
    result = {
        "name": name,
        **data,
        "figures": [
            {"figure": figure, "value": value, "aim": aim, "met": met}
            for figure, value, aim, met in rows
        ],
    }
    if write:
        write_result(name, result)
    return result


def wait_keyword_index(worker: Any, timeout: float = 300) -> float:
    """Seconds until the worker's in-memory keyword index has loaded (searches use FTS5 until
    then); 0 when this build or configuration has none."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        _, status = worker.request("GET", "/api/status", timeout=30)
        state = (status.get("services") or {}).get("keyword_index", {}).get("status")
        if state in (None, "ready", "failed"):
            return round(time.monotonic() - started, 2) if state == "ready" else 0.0
        time.sleep(0.1)
    raise SystemExit(f"the keyword index did not load in {timeout}s")
