"""Supersession in a crowd: each pair set's older memories stored together, then each newer one.

The pair scorer (tests/supersession_pairs.py) saves each pair in a project of its own: the new
memory meets one candidate, its own old one. In a real store it meets every memory that shares a
search term with it (and, with the model loaded, its nearest by vector). Here each set's old
texts are saved into one project (a fresh one per set), then each new text in turn, with the
real save (worker.memory.merge.save) and the cosines the default model gives against every old
text, as the memories API passes them (its ten nearest). Per set:

- caught: updates whose own old memory was superseded;
- wrong own: distinct pairs whose old memory was superseded by its new one (as the pair scorer);
- stray: old memories of OTHER pairs a new memory superseded (what the pair scorer cannot see);
- saves with any stray supersession.

Each new memory is forgotten again before the next is saved (which makes what it superseded
current again), so every new memory meets the same crowd. Run: `.venv/bin/python bench/supersession_crowd.py [--set NAME ...] [--words-only]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.supersession_pairs import SETS, load_pairs  # noqa: E402
from worker.memory.merge import save  # noqa: E402
from worker.settings import load_settings  # noqa: E402
from worker.store import Store, memories  # noqa: E402

NEAREST = 10  # what worker/ops/memories.similar_memories passes a save


def run_set(store: Store, settings: Any, name: str, embedder: Any) -> dict[str, int]:
    pairs = load_pairs(name)
    project = f"/crowd/{name}"
    old_ids: list[int] = []
    for p in pairs:
        item = {
            "kind": p["kind"],
            "content": p["old"],
            "project": project,
            "scope": "project",
            "supersede": False,  # the crowd as it stands: no old memory replaces another
        }
        old_ids.append(int(store.write_sync(lambda c, i=item: save(c, i, settings)).row["id"]))
    olds = embedder.embed([p["old"] for p in pairs]) if embedder else None
    news = embedder.embed([p["new"] for p in pairs]) if embedder else None
    tally = dict(updates=0, caught=0, distinct=0, wrong_own=0, stray=0, stray_saves=0)
    for i, p in enumerate(pairs):
        similar = None
        if olds is not None and news is not None:
            cos = olds @ news[i]
            top = np.argsort(-cos)[:NEAREST]
            similar = {old_ids[j]: float(cos[j]) for j in top}
        item = {"kind": p["kind"], "content": p["new"], "project": project, "scope": "project"}
        saved = store.write_sync(lambda c, i=item, s=similar: save(c, i, settings, s))
        hit = set(saved.superseded)
        own = old_ids[i] in hit
        stray = len(hit - {old_ids[i]})
        if p["label"] == "update":
            tally["updates"] += 1
            tally["caught"] += own
        else:
            tally["distinct"] += 1
            tally["wrong_own"] += own
        tally["stray"] += stray
        tally["stray_saves"] += stray > 0
        # Put the crowd back as it was: the new memory forgotten (its relations with it), the
        # old ones it superseded current again.
        new_id = int(saved.row["id"])
        store.write_sync(lambda c, new_id=new_id: memories.delete(c, new_id))
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", dest="sets", action="append", choices=SETS)
    parser.add_argument("--words-only", action="store_true", help="no model: no cosines")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings({"CAIRN_HOME": tmp})
        store = Store(settings.db_path)
        store.open()
        embedder = None
        if not args.words_only:
            from worker.retrieval.embedder import DEFAULT_MODEL, load_embedder

            embedder = load_embedder(DEFAULT_MODEL, "", Path(tmp) / "models", 8, 256, quantize=True)
        print(f"{'set':<10}{'caught':>10}{'wrong own':>11}{'stray':>7}{'stray saves':>13}")
        try:
            for name in args.sets or SETS:
                t = run_set(store, settings, name, embedder)
                print(
                    f"{name:<10}{t['caught']:>6}/{t['updates']:<3}{t['wrong_own']:>7}/{t['distinct']:<3}"
                    f"{t['stray']:>7}{t['stray_saves']:>9}/{len(load_pairs(name))}"
                )
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
