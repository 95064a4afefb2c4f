"""Fits the supersession model (worker/memory/supersession_model.py) and says how well it holds on
pair sets it was not fitted on.

Input: the labelled pair sets in tests/data/ (tests/supersession_pairs.py loads them): each pair an
older and a newer memory, `update` (the newer replaces the older) or `distinct` (both hold). Each
pair's features are computed as the worker computes them at a save: the word rule's verdict, the
two texts' keys, and the cosine of their vectors by the default model (int8, as the worker runs
it; cached under .cache/ by text).

Two regressions: `vector` (every feature) and `words` (no cosine: the worker without its model).
Each is an L2-penalised logistic regression (bench/logistic_fit.py). The cut maximises
caught share - WRONG_COST x wrongly-superseded share: a wrong supersession hides a true fact, a
missed one leaves two versions side by side, so a wrong one costs three missed ones.

Leave one set out: each set is judged by a model fitted, and its cut chosen, on the other sets;
pooled, those are the cross-validated figures. Features are chosen by backward elimination on
that objective, the penalty among a few values. `--hold SET` keeps a set out of everything
(fitting, selection, penalty, cut) and scores it once at the end with the model written.

Run: `.venv/bin/python bench/train_supersession.py [--hold blind11] [--write]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import logistic_fit  # noqa: E402
from bench.logistic_fit import Array, Fitted  # noqa: E402
from bench.supersession_features import FEATURES, RULE, pair_features  # noqa: E402
from tests.supersession_pairs import SETS, load_pairs  # noqa: E402
from worker.memory.statement import features  # noqa: E402
from worker.memory.supersession import judge  # noqa: E402

CACHE = ROOT / ".cache" / "supersession-cosines.json"
PENALTIES = (0.1, 1.0, 10.0)
WRONG_COST = 3.0
CUTS = tuple(round(c, 3) for c in np.arange(0.2, 0.91, 0.025))
MIN_SIMILARITY = 0.5  # the setting's default (CAIRN_SUPERSEDE_MIN_SIMILARITY)
# The word rule's own verdict (RULE: rule_update, rule_distinct) is a candidate feature only with
# --with-rule: the rule was tuned on most of these sets, so its weight fitted on them says how
# well it fits them, not how it holds on new pairs (left out, blind6 is caught 13/20 with it,
# 19/20 without; see docs/how-it-works.md).

# --stack: the rule's update verdicts stand and the model decides the rest (fitted on the rest).
STACK = [False]


def variants(with_rule: bool) -> dict[str, list[int]]:
    kept = [i for i, name in enumerate(FEATURES) if with_rule or name not in RULE]
    return {"vector": kept, "words": [i for i in kept if FEATURES[i] != "cosine"]}


@dataclass
class Pairs:
    sets: list[str]  # per row
    ids: list[str]
    x: Array
    y: Array  # 1.0 update, 0.0 distinct
    changed: Array  # the new text says something the old does not (else never an update)


def cosines(pairs: list[dict[str, str]]) -> dict[str, float]:
    """The cosine of each pair's two texts by the default model, cached by text."""
    cached: dict[str, float] = json.loads(CACHE.read_text()) if CACHE.exists() else {}

    def key(p: dict[str, str]) -> str:
        return hashlib.sha1(f"{p['old']}\x00{p['new']}".encode()).hexdigest()

    missing = [p for p in pairs if key(p) not in cached]
    if missing:
        import tempfile

        from worker.retrieval.embedder import DEFAULT_MODEL, load_embedder

        with tempfile.TemporaryDirectory() as tmp:
            embedder = load_embedder(DEFAULT_MODEL, "", Path(tmp) / "models", 8, 256, quantize=True)
            olds = embedder.embed([p["old"] for p in missing])
            news = embedder.embed([p["new"] for p in missing])
        for p, o, n in zip(missing, olds, news, strict=True):
            cached[key(p)] = float(o @ n)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(cached))
    return {p["id"]: cached[key(p)] for p in pairs}


def load(sets: list[str]) -> Pairs:
    pairs = [(s, p) for s in sets for p in load_pairs(s)]
    cos = cosines([p for _, p in pairs])
    rows = []
    changes = []
    for _, p in pairs:
        new, old = features(p["new"]), features(p["old"])
        if p["kind"] == "decision":
            old = dataclasses.replace(old, decided=True)  # as the save marks a stored decision
        values = pair_features(new, old, judge(new, old, MIN_SIMILARITY), cos[p["id"]])
        rows.append([values[name] for name in FEATURES])
        changes.append(values["changed"] > 0)
    return Pairs(
        sets=[s for s, _ in pairs],
        ids=[p["id"] for _, p in pairs],
        x=np.array(rows, dtype=np.float64),
        y=np.array([p["label"] == "update" for _, p in pairs], dtype=np.float64),
        changed=np.array(changes, dtype=bool),
    )


def probability(model: Fitted, data: Pairs, rows: Array) -> Array:
    """As the worker decides: 1 where the word rule says update, 0 where the new text changes
    nothing, else the model's."""
    p = np.where(data.changed[rows], model.probability(data.x[rows]), 0.0)
    return np.where(rule_hits(data)[rows], 1.0, p) if STACK[0] else p


def fit(data: Pairs, rows: Array, columns: list[int], penalty: float) -> Fitted:
    """Each set weighs the same, and within it updates and distinct pairs the same; pairs the
    word rule calls an update, or whose new text changes nothing, are decided before the model
    and left out of its fit."""
    keep = data.changed[rows]
    if STACK[0]:
        keep = keep & ~rule_hits(data)[rows]
    rows = rows[keep]
    sets = np.array(data.sets)[rows]
    y = data.y[rows]
    w = np.ones(len(y))
    for s in set(sets):
        for label in (0.0, 1.0):
            mask = (sets == s) & (y == label)
            w[mask] = 1.0 / max(1, mask.sum())
    return logistic_fit.fit(data.x[rows], y, w, columns, penalty)


@dataclass
class Tally:
    updates: int = 0
    caught: int = 0
    distinct: int = 0
    wrong: int = 0

    def add(self, y: Array, hit: Array) -> None:
        self.updates += int((y == 1).sum())
        self.caught += int(((y == 1) & hit).sum())
        self.distinct += int((y == 0).sum())
        self.wrong += int(((y == 0) & hit).sum())

    def objective(self) -> float:
        caught = self.caught / max(1, self.updates)
        return caught - WRONG_COST * self.wrong / max(1, self.distinct)

    def line(self) -> str:
        return (
            f"{self.caught:>3}/{self.updates:<3} caught  {self.wrong:>2}/{self.distinct:<3} wrong"
            f"  ({self.objective():+.3f})"
        )


def best_cut(data: Pairs, rows: Array, model: Fitted) -> float:
    p = probability(model, data, rows)
    y = data.y[rows]
    sets = np.array(data.sets)[rows]
    scored = []
    for cut in CUTS:
        # Each set counts as one: the mean of the sets' objectives.
        values = []
        for s in set(sets):
            tally = Tally()
            tally.add(y[sets == s], p[sets == s] >= cut)
            values.append(tally.objective())
        scored.append((float(np.mean(values)), -abs(cut - 0.5), cut))
    return max(scored)[2]


def held_out(data: Pairs, columns: list[int], penalty: float) -> dict[str, Array]:
    """Each set's decisions by a model fitted (and its cut chosen) on the other sets."""
    names = np.array(data.sets)
    hits: dict[str, Array] = {}
    for s in dict.fromkeys(data.sets):
        train = np.flatnonzero(names != s)
        test = np.flatnonzero(names == s)
        model = fit(data, train, columns, penalty)
        cut = best_cut(data, train, model)
        hits[s] = probability(model, data, test) >= cut
    return hits


def mean_objective(data: Pairs, hits: dict[str, Array]) -> float:
    names = np.array(data.sets)
    values = []
    for s, hit in hits.items():
        tally = Tally()
        tally.add(data.y[names == s], hit)
        values.append(tally.objective())
    return float(np.mean(values))


def select(data: Pairs, columns: list[int], penalty: float) -> tuple[list[int], list[str]]:
    """Backward elimination on the leave-one-set-out objective."""
    columns = list(columns)
    score = mean_objective(data, held_out(data, columns, penalty))
    log = [f"all {len(columns)} features: held-out objective {score:.3f}"]
    while len(columns) > 1:
        trials = [
            (mean_objective(data, held_out(data, [k for k in columns if k != c], penalty)), c)
            for c in columns
        ]
        value, drop = max(trials)
        if value < score - 1e-9:
            break
        columns.remove(drop)
        score = value
        log.append(f"- {FEATURES[drop]}: {score:.3f}")
    return columns, log


def rule_hits(data: Pairs) -> Array:
    return data.x[:, FEATURES.index("rule_update")] > 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hold", action="append", default=[], help="a set kept out of it all")
    parser.add_argument("--write", action="store_true", help="write the model file")
    parser.add_argument("--no-select", action="store_true", help="keep every feature")
    parser.add_argument("--with-rule", action="store_true", help="the rule's verdict a feature")
    parser.add_argument("--train", action="append", choices=SETS, help="fit on these sets only")
    parser.add_argument("--stack", action="store_true", help="the rule's updates, then the model")
    parser.add_argument("--out", type=Path, help="where --write puts the fitted model")
    args = parser.parse_args()
    STACK[0] = args.stack
    sets = [s for s in (args.train or SETS) if s not in args.hold]
    data = load(sets)
    held = load(args.hold) if args.hold else None
    print(f"{len(data.ids)} pairs in {len(sets)} sets; held out of everything: {args.hold or '-'}")
    doc: dict[str, object] = {
        "note": "fitted by bench/train_supersession.py; do not edit by hand",
    }
    names = np.array(data.sets)
    for variant, every in variants(args.with_rule).items():
        tried = []
        for penalty in PENALTIES:
            score = mean_objective(data, held_out(data, every, penalty))
            tried.append((score, -penalty, penalty))
            print(f"[{variant}] penalty {penalty}: held-out objective {score:.3f}")
        penalty = max(tried)[2]
        columns, log = (every, []) if args.no_select else select(data, every, penalty)
        for line in log:
            print("  " + line)
        hits = held_out(data, columns, penalty)
        model = fit(data, np.arange(len(data.ids)), columns, penalty)
        cut = best_cut(data, np.arange(len(data.ids)), model)
        fitted_hits = probability(model, data, np.arange(len(data.ids))) >= cut
        print(f"[{variant}] penalty {penalty}, cut {cut}: {[FEATURES[c] for c in columns]}")
        print(f"  {'set':<10}{'word rule':<34}{'fitted':<34}held out")
        totals = [Tally(), Tally(), Tally()]
        for s in dict.fromkeys(data.sets):
            mask = names == s
            row = [Tally(), Tally(), Tally()]
            for tally, total, hit in zip(
                row, totals, (rule_hits(data)[mask], fitted_hits[mask], hits[s]), strict=True
            ):
                tally.add(data.y[mask], hit)
                total.add(data.y[mask], hit)
            print(f"  {s:<10}" + "".join(f"{t.line():<34}" for t in row).rstrip())
        print(f"  {'all':<10}" + "".join(f"{t.line():<34}" for t in totals).rstrip())
        if held is not None:
            for s in dict.fromkeys(held.sets):
                mask = np.array(held.sets) == s
                rule, new = Tally(), Tally()
                rule.add(held.y[mask], rule_hits(held)[mask])
                new.add(held.y[mask], probability(model, held, np.flatnonzero(mask)) >= cut)
                print(f"  {s:<10}{rule.line():<34}{new.line():<34}(held out of everything)")
        weights = {
            FEATURES[c]: round(float(w), 3) for c, w in zip(columns, model.weights, strict=True)
        }
        print("  weights (per standard deviation):", weights)
        doc[variant] = {
            **model.document(list(FEATURES), cut),
            "training": {"sets": sets, "pairs": len(data.ids), "penalty": penalty},
        }
    if args.write and args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
