"""Fits the prompt-time relevance model (worker/retrieval/relevance.py) and says how well it holds
on projects it was not fitted on.

Input: what `bench/coding_memory.py --mode hybrid --explain --json FILE` recorded: for every probe,
every candidate the prompt context judged, with its features and whether its line holds one of the
probe's markers (the benchmark's own scoring rule). Several files (e.g. the corpus as it is and
padded to real size) are pooled; a project's probes in each file count as that project's.

The model is a logistic regression over standardised features with an L2 penalty, fitted by
Newton's method (numpy). An item is given when its probability reaches the cut; the given items,
most probable first, fill the prompt's item limit and token budget as the worker fills them, and
the benchmark's figures are computed from that (simulated: no worker is started). The cut is the
one that maximises the benchmark's objective (bench/coding_memory.py objective()) on the
projects the model was fitted on.

Leave one project out: for each project, the model is fitted and its cut chosen on the others,
and the held-out project's probes are judged by it; pooled, those are the cross-validated
figures. The features are chosen the same way: starting from all of them, the one whose removal
raises the cross-validated objective most is dropped, while some removal does not lower it
(backward elimination). The penalty is chosen among a few values by the same objective.

Run: `.venv/bin/python bench/train_relevance.py RESULT.json [...] [--write]` (--write: the model
fitted on every project, with the chosen features, penalty and cut, goes to
worker/retrieval/relevance_model.json). Prints the fitted and cross-validated figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import logistic_fit  # noqa: E402
from bench.coding_memory import SHOWN, objective, summarise  # noqa: E402
from bench.logistic_fit import Fitted  # noqa: E402
from worker.retrieval.relevance import FEATURES, MODEL_FILE, only_the_question  # noqa: E402
from worker.retrieval.tokens import estimate_tokens  # noqa: E402

HEADER = "## Cairn: relevant memory"
HEADER_TOKENS = estimate_tokens(HEADER)
# The fence and the hook's wrapper around the lines (characters), counted in the tokens figure.
WRAPPER_CHARS = 80
PENALTIES = (0.3, 3.0)
# How much more a candidate holding a relevant marker weighs in the fit than one holding only
# an acceptable one (recall counts relevant markers only), chosen with the penalty.
RELEVANT_WEIGHTS = (1.0, 3.0)
# Groups of projects for the feature selection's cross-validation (leave-one-project-out for
# the figures reported).
SELECT_FOLDS = 6
CUTS = tuple(round(c, 3) for c in np.arange(0.10, 0.86, 0.05))
Array = npt.NDArray[np.float64]
# How much more a candidate holding a relevant marker weighs than one holding an acceptable one.
RELEVANT_WEIGHT = [1.0]


@dataclass
class Probe:
    project: str
    category: str
    markers: int
    x: Array  # candidates x all features
    good: npt.NDArray[np.bool_]
    found: list[set[str]]
    texts: list[str]
    costs: list[int]  # each line's tokens, as the worker's Composer counts them
    # What the worker never gives, whatever the model says (relevance.only_the_question).
    never: npt.NDArray[np.bool_]


def load(paths: list[Path], max_items: int) -> list[Probe]:
    probes: list[Probe] = []
    for path in paths:
        doc = json.loads(path.read_text())
        for mode in doc["modes"]:
            if not mode["mode"].startswith("hybrid"):
                continue
            for row in mode["probes"]:
                cands = row.get("candidates")
                if cands is None:
                    raise SystemExit(f"{path}: no candidates (run coding_memory.py --explain)")
                x = np.array(
                    [[float(c["features"][f]) for f in FEATURES] for c in cands], dtype=np.float64
                ).reshape(len(cands), len(FEATURES))
                probes.append(
                    Probe(
                        project=row["project"],
                        category=row["category"],
                        markers=int(row["markers"]),
                        x=x,
                        good=np.array([bool(c["good"]) for c in cands], dtype=bool),
                        found=[set(c["found"]) for c in cands],
                        texts=[str(c["text"]) for c in cands],
                        costs=[estimate_tokens(str(c["text"])) for c in cands],
                        never=np.array(
                            [only_the_question(c["features"]) for c in cands], dtype=bool
                        ),
                    )
                )
    del max_items
    return probes


def fit(probes: list[Probe], columns: list[int], penalty: float) -> Fitted:
    """The regression on these probes' candidates; each probe weighs the same."""
    x = np.concatenate([p.x for p in probes])
    y = np.concatenate([p.good for p in probes]).astype(np.float64)
    w_row = np.concatenate(
        [
            np.array([RELEVANT_WEIGHT[0] if f else 1.0 for f in p.found]) / max(1, len(p.good))
            for p in probes
        ]
    )
    return logistic_fit.fit(x, y, w_row, columns, penalty)


def compose(probe: Probe, prob: Array, cut: float, limit: int, budget: int) -> dict[str, Any]:
    """The prompt's context as the worker composes it, scored as the benchmark scores it."""
    # As worker/retrieval/context_builder.Composer fills it: the header with the first line,
    # then each line that still fits (a line too long is skipped, the next may fit). What the
    # worker never gives (relevance.only_the_question) is not given here either.
    prob = np.where(probe.never, 0.0, prob)
    order = [int(i) for i in np.argsort(-prob, kind="stable") if prob[i] >= cut][:limit]
    kept: list[int] = []
    used = 0
    for i in order:
        cost = probe.costs[i] + (0 if kept else HEADER_TOKENS)
        if used + cost <= budget:
            kept.append(i)
            used += cost
    found = set().union(*(probe.found[i] for i in kept)) if kept else set()
    chars = sum(len(probe.texts[i]) + 1 for i in kept)
    return {
        "category": probe.category,
        "lines": len(kept),
        "relevant_lines": int(sum(probe.good[i] for i in kept)),
        "markers": probe.markers,
        "found": len(found),
        "tokens": (chars + len(HEADER) + WRAPPER_CHARS) / 4 if kept else 0.0,
    }


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return summarise(rows)


def best_cut(
    probes: list[Probe], probs: list[Array], limit: int, budget: int
) -> tuple[float, float]:
    scored = []
    for cut in CUTS:
        rows = [compose(p, pr, cut, limit, budget) for p, pr in zip(probes, probs, strict=True)]
        scored.append((objective(figures(rows)), -cut, cut))
    value, _, cut = max(scored)
    return cut, value


def held_out(
    probes: list[Probe],
    columns: list[int],
    penalty: float,
    limit: int,
    budget: int,
    folds: int = 0,
) -> list[dict[str, Any]]:
    """Each project's rows judged by a model fitted on other projects: leave one project out,
    or (`folds` > 0) that many groups of projects, each left out in turn (cheaper)."""
    projects = sorted({p.project for p in probes})
    groups = [projects[i::folds] for i in range(folds)] if folds else [[p] for p in projects]
    rows: list[dict[str, Any]] = []
    for group in groups:
        train = [p for p in probes if p.project not in group]
        test = [p for p in probes if p.project in group]
        model = fit(train, columns, penalty)
        cut, _ = best_cut(train, [model.probability(p.x) for p in train], limit, budget)
        for p in test:
            row = compose(p, model.probability(p.x), cut, limit, budget)
            row["project"] = p.project
            rows.append(row)
    return rows


def select(
    probes: list[Probe], limit: int, budget: int, penalty: float
) -> tuple[list[int], float, list[str]]:
    """Backward elimination on the cross-validated objective (six groups of projects)."""
    columns = list(range(len(FEATURES)))

    def score_of(cols: list[int]) -> float:
        return objective(figures(held_out(probes, cols, penalty, limit, budget, SELECT_FOLDS)))

    score = score_of(columns)
    log = [f"all {len(columns)} features: cross-validated objective {score:.3f}"]
    while len(columns) > 1:
        trials = []
        for c in columns:
            trials.append((score_of([k for k in columns if k != c]), c))
        value, drop = max(trials)
        if value < score - 1e-9:
            break
        columns.remove(drop)
        score = value
        log.append(f"- {FEATURES[drop]}: {score:.3f}")
    return columns, score, log


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--write", action="store_true", help="write the model file")
    parser.add_argument("--limit", type=int, default=8, help="items per prompt (the setting)")
    parser.add_argument("--budget", type=int, default=500, help="prompt tokens (the setting)")
    parser.add_argument("--no-select", action="store_true", help="keep every feature")
    parser.add_argument("--out", type=Path, default=MODEL_FILE)

    args = parser.parse_args()
    probes = load(args.results, args.limit)
    projects = sorted({p.project for p in probes})
    print(
        f"{len(probes)} probes, {len(projects)} projects, "
        f"{sum(len(p.good) for p in probes)} candidates"
    )
    every = list(range(len(FEATURES)))
    tried = []
    for penalty in PENALTIES:
        for weight in RELEVANT_WEIGHTS:
            RELEVANT_WEIGHT[0] = weight
            rows = held_out(probes, every, penalty, args.limit, args.budget)
            score = objective(figures(rows))
            print(f"penalty {penalty}, relevant weight {weight}: held-out objective {score:.3f}")
            tried.append((score, penalty, weight))
    _, penalty, weight = max(tried)
    RELEVANT_WEIGHT[0] = weight
    columns, log = every, []
    if not args.no_select:
        columns, _, log = select(probes, args.limit, args.budget, penalty)
    for line in log:
        print("  " + line)
    cv_rows = held_out(probes, columns, penalty, args.limit, args.budget)
    model = fit(probes, columns, penalty)
    probs = [model.probability(p.x) for p in probes]
    cut, _ = best_cut(probes, probs, args.limit, args.budget)
    fitted_rows = [
        compose(p, pr, cut, args.limit, args.budget) for p, pr in zip(probes, probs, strict=True)
    ]
    fitted, cv = figures(fitted_rows), figures(cv_rows)
    print(
        f"penalty {penalty}, relevant weight {weight}, cut {cut}, features: {[FEATURES[c] for c in columns]}"
    )
    print(f"{'figure':<22}{'fitted':>10}{'held out':>10}{'gap':>8}")
    for name in (
        "recall",
        "hit_rate",
        "false_silence",
        "silence_on_none",
        "precision",
        "tokens_per_prompt",
    ):
        a, b = fitted.get(name), cv.get(name)
        gap = "" if a is None or b is None else f"{b - a:+.3f}"
        print(f"{name:<22}{a!s:>10}{b!s:>10}{gap:>8}")
    weights = {FEATURES[c]: round(float(w), 4) for c, w in zip(columns, model.weights, strict=True)}
    print("weights (per standard deviation):", weights)
    if args.write:
        doc = {
            "note": "fitted by bench/train_relevance.py; do not edit by hand",
            **model.document(list(FEATURES), cut),
            "training": {
                "results": [p.name for p in args.results],
                "projects": len(projects),
                "probes": len(probes),
                "penalty": penalty,
                "relevant_weight": weight,
                "fitted": {k: v for k, v in fitted.items() if k in (*SHOWN, "false_silence")},
                "held_out": {k: v for k, v in cv.items() if k in (*SHOWN, "false_silence")},
            },
        }
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
