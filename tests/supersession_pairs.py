"""Score the real supersession decision over the pair sets in tests/data/.

Sets: `dev` and `held-out` (tests/data/supersession-pairs.json), `fresh`, `extra`, `extra2` and `extra3`
(sets the rule may be tuned on) and `blind1`..`blind11` (written before the rule was tuned; scored,
never tuned on, never asserted at tuned values). Each pair is saved through
`worker.memory.merge.save` in a project of its own (old, then new), as the memories API does: with `similar` (the new text's cosine with the old memory's vector)
when an embedder is given, without it otherwise (the lexical decision alone, as when the model
is not loaded). A pair counts as superseded when the new memory's save lists the old one.

    .venv/bin/python -m tests.supersession_pairs                  # every set: words, then the model
    .venv/bin/python -m tests.supersession_pairs --set blind1 -v  # one set, with the misses listed
    .venv/bin/python -m tests.supersession_pairs --words-only     # no model: the lexical rule alone

`shift` moves every cosine by that much before the decision: scoring at -MARGIN for the updates
and +MARGIN for the distinct pairs gives the figures a CPU whose int8 kernel moves cosines that
far would see at worst (tests/vector_margins.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.memory.merge import save
from worker.retrieval.embedder import Embedder
from worker.settings import Settings, load_settings
from worker.store import Store

DATA = Path(__file__).parent / "data"
PAIRS_PATH = DATA / "supersession-pairs.json"
SPLITS = ("dev", "held-out")
EXTRA_SETS = (
    "fresh",
    "extra",
    "extra2",
    "extra3",
    "blind1",
    "blind2",
    "blind3",
    "blind4",
    "blind5",
    "blind6",
    "blind7",
    "blind8",
    "blind9",
    "blind10",
    "blind11",
)
SETS = (*SPLITS, *EXTRA_SETS)


def load_pairs(split: str | None = None) -> list[dict[str, str]]:
    """The pairs of one set (`dev`, `held-out`, `fresh`, `extra`, `blind1`..), or of the first file."""
    if split in EXTRA_SETS:
        path = DATA / f"supersession-pairs-{split}.json"
        return list(json.loads(path.read_text())["pairs"])
    pairs: list[dict[str, str]] = json.loads(PAIRS_PATH.read_text())["pairs"]
    return [p for p in pairs if split is None or p["split"] == split]


def cosines(embedder: Embedder, pairs: Sequence[dict[str, str]]) -> dict[str, float]:
    """The new text's cosine with the old one's vector, per pair id (what `similar` carries)."""
    olds = embedder.embed([p["old"] for p in pairs])
    news = embedder.embed([p["new"] for p in pairs])
    return {p["id"]: float(o @ n) for p, o, n in zip(pairs, olds, news, strict=True)}


@dataclass
class Score:
    updates: int = 0
    caught: int = 0
    distinct: int = 0
    wrong: int = 0
    missed_ids: list[str] = field(default_factory=list)
    wrong_ids: list[str] = field(default_factory=list)

    @property
    def caught_share(self) -> float:
        return self.caught / self.updates if self.updates else 0.0

    @property
    def wrong_share(self) -> float:
        return self.wrong / self.distinct if self.distinct else 0.0

    def line(self, name: str) -> str:
        return (
            f"{name:<34} updates caught {self.caught:>2}/{self.updates} "
            f"({self.caught_share:6.1%})   distinct superseded {self.wrong:>2}/{self.distinct} "
            f"({self.wrong_share:5.1%})"
        )


def superseded(
    store: Store,
    settings: Settings,
    pair: dict[str, str],
    project: str,
    cosine: float | None,
) -> bool:
    """Save old then new in `project`; did the new one supersede the old?"""

    def item(text: str) -> dict[str, Any]:
        return {"kind": pair["kind"], "content": text, "project": project, "scope": "project"}

    old = store.write_sync(lambda c: save(c, item(pair["old"]), settings))
    similar = None if cosine is None else {int(old.row["id"]): cosine}
    new = store.write_sync(lambda c: save(c, item(pair["new"]), settings, similar))
    return int(old.row["id"]) in new.superseded


def score(
    store: Store,
    settings: Settings,
    pairs: Sequence[dict[str, str]],
    cosine_of: dict[str, float] | None = None,
    shift: float = 0.0,
    run: str = "",
) -> Score:
    """Updates caught and distinct pairs superseded; cosines moved by -shift for updates and
    +shift for distinct pairs (the worst a CPU `shift` away could do)."""
    result = Score()
    for pair in pairs:
        is_update = pair["label"] == "update"
        cosine = None
        if cosine_of is not None:
            cosine = cosine_of[pair["id"]] + (-shift if is_update else shift)
        hit = superseded(store, settings, pair, f"/pairs/{run}/{pair['id']}", cosine)
        if is_update:
            result.updates += 1
            result.caught += hit
            if not hit:
                result.missed_ids.append(pair["id"])
        else:
            result.distinct += 1
            result.wrong += hit
            if hit:
                result.wrong_ids.append(pair["id"])
    return result


def main(argv: Sequence[str]) -> int:
    from tests.vector_margins import MARGIN
    from worker.retrieval.embedder import DEFAULT_MODEL, load_embedder

    parser = argparse.ArgumentParser(
        prog="python -m tests.supersession_pairs", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--set", dest="sets", action="append", choices=SETS, help="a set to score (repeatable)"
    )
    parser.add_argument("--words-only", action="store_true", help="skip the real model")
    parser.add_argument("-v", "--verbose", action="store_true", help="list missed/wrong pair ids")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings({"CAIRN_HOME": tmp})
        store = Store(settings.db_path)
        store.open()
        embedder = None
        if not args.words_only:
            models = Path(tmp) / "models"
            embedder = load_embedder(DEFAULT_MODEL, "", models, 8, 256, quantize=True)
        try:
            for split in args.sets or SETS:
                pairs = load_pairs(split)
                runs: list[tuple[str, dict[str, float] | None, float]] = [("words", None, 0.0)]
                if embedder is not None:
                    cos = cosines(embedder, pairs)
                    runs += [("model (int8)", cos, 0.0), (f"model -/+{MARGIN:.2f}", cos, MARGIN)]
                for name, cosine_of, shift in runs:
                    result = score(store, settings, pairs, cosine_of, shift, f"{split}/{name}")
                    print(result.line(f"{split} {name}"))
                    if args.verbose:
                        print("   missed:", result.missed_ids, " wrong:", result.wrong_ids)
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
