"""How far the embedding alone can tell what a prompt needs from what a prompt about nothing stored
gets: the ceiling the vectors put on the prompt-time judgment, per probe category.

Input: what `bench/coding_memory.py --mode hybrid --explain --json FILE` recorded (every
candidate of every probe, with its features and whether its line holds what the probe needs).
For each category of answerable probe:

- **AUC**: the chance that the probe's closest relevant candidate (the higher of its whole-text
  and best-clause cosine) is closer to its prompt than the closest candidate of a random
  unrelated probe (category `none`) is to its own. 0.5 is a coin; 1.0 separates them fully.
- **reachable at 90% silence**: the share of the category's markers held by a candidate at or
  above the cosine that leaves 90% of the unrelated probes with no candidate that close (the
  silence aim), that is, what a cut on closeness alone could give while meeting silence.

Words add what the vectors miss for most categories (a shared file or code name, a rare word of
the project), but a paraphrase shares no content word with what it should find by construction,
so for paraphrases these figures are close to what any judgment over this model's vectors can
reach.

Run: `.venv/bin/python bench/judgment_ceiling.py RESULT.json [...]` (prints a table).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

SILENCE_AIM = 0.90


def closeness(cand: dict[str, Any]) -> float:
    f = cand["features"]
    return max(float(f["cosine"]), float(f.get("clause", 0.0)))


def auc(positives: list[float], negatives: list[float]) -> float:
    """P(a random positive > a random negative), ties counting half."""
    if not positives or not negatives:
        return float("nan")
    wins = 0.0
    for p in positives:
        for n in negatives:
            wins += 1.0 if p > n else 0.5 if p == n else 0.0
    return wins / (len(positives) * len(negatives))


def ceiling(probes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    unrelated = sorted(
        max((closeness(c) for c in p["candidates"]), default=0.0)
        for p in probes
        if p["category"] == "none"
    )
    if not unrelated:
        raise SystemExit("no unrelated probes (category 'none') in the input")
    cut = unrelated[min(len(unrelated) - 1, int(SILENCE_AIM * len(unrelated)))]
    out: dict[str, dict[str, float]] = {}
    for category in sorted({p["category"] for p in probes} - {"none"}):
        rows = [p for p in probes if p["category"] == category]
        best = [
            max(closeness(c) for c in p["candidates"] if c["good"])
            for p in rows
            if any(c["good"] for c in p["candidates"])
        ]
        markers = sum(int(p["markers"]) for p in rows)
        reachable = 0
        for p in rows:
            found: set[str] = set()
            for c in p["candidates"]:
                if closeness(c) >= cut:
                    found |= set(c["found"])
            reachable += len(found)
        out[category] = {
            "probes": len(rows),
            "auc": round(auc(best, unrelated), 3),
            "markers": markers,
            "reachable": round(reachable / markers, 3) if markers else float("nan"),
            "cut": round(cut, 3),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+")
    args = parser.parse_args()
    for path in args.results:
        doc = json.loads(path.read_text())
        for mode in doc["modes"]:
            probes = mode["probes"]
            if not probes or "candidates" not in probes[0]:
                raise SystemExit(f"{path}: no candidates (run coding_memory.py --explain)")
            table = ceiling(probes)
            cut = next(iter(table.values()))["cut"] if table else 0.0
            print(f"{path.name} ({mode['mode']}): closeness that keeps {SILENCE_AIM:.0%} of")
            print(f"unrelated prompts silent: {cut}")
            print(f"{'category':<12}{'probes':>8}{'AUC':>8}{'markers':>9}{'reachable':>11}")
            for category, row in table.items():
                print(
                    f"{category:<12}{row['probes']:>8}{row['auc']:>8.3f}"
                    f"{row['markers']:>9}{row['reachable']:>11.3f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
