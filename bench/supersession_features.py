"""The evidence of one (new, old) memory pair, for a calibrated supersession model (a study:
bench/train_supersession.py fits and cross-validates it; the worker does not use it yet).

The word rule (worker/memory/supersession.py) reads the two texts' keys and says `update`,
`distinct` or `unknown`. Beside its verdict, a few plain measures of the pair: how close the two
vectors are, whether the new text announces a change, retires or drops something the old one
says, what share of the old text's keys it restates, whether each holds a number the other
lacks, whether an environment or region differs, whether it only adds ("also"), negates the old,
or is headed by another subject. `changed` is a gate, not a feature: a text that says nothing
new, or speaks of another environment, replaces nothing.
"""

from __future__ import annotations

import re

from worker.memory.statement import DIGIT, RELATION_STEMS, Features
from worker.memory.supersession import Verdict

RULE = ("rule_update", "rule_distinct")
_SPLIT = re.compile(r"[-/_.:]")
# Parts of a split key too small to name a thing ("per", "v" of "per-key", "v2").
HEAD_KEYS = 3  # a text's head when no number changed: its first keys
STOP_PARTS = frozenset({"per", "v", "x", "to", "of", "a", "s"})

FEATURES = (
    "rule_update",  # the word rule says update
    "rule_distinct",  # the word rule says distinct (unknown is neither)
    "cosine",  # the two texts' vectors (0 in the words model)
    "announced",  # the new text has a change cue the old lacks ("now", "switched", "raised")
    "retires",  # the new text retires, drops or hands on something the old one says
    "coverage",  # share of the old text's keys the new one restates
    "jaccard",  # shared keys over all keys of both
    "head_named",  # the old text's subject (first key that is no relation verb) is in the new
    "number_changed",  # each holds a number the other lacks
    "qualifier_changed",  # an environment, region or label only one of them names
    "additive",  # the new text says it adds ("also", "too")
    "flipped",  # one negates, the other not
    "new_head",  # the new text is headed by a subject the old one does not name
    "subject_swap",  # each text names, at its head, a thing the other lacks
)


def pair_features(
    new: Features, old: Features, verdict: Verdict | None, cosine: float | None
) -> dict[str, float]:
    """The evidence of one (new, old) pair, by feature name."""
    mine = {k.key for k in new.keys}
    theirs = {k.key for k in old.keys}
    shared = mine & theirs
    subject = next((k.key for k in old.keys if k.key not in RELATION_STEMS), None)
    retiring = (new.retired - old.retired) | new.dropped | new.contrasted | new.replaced
    numbers_new = {k.key for k in new.keys if k.value and DIGIT.search(k.key)} - theirs
    numbers_old = {k.key for k in old.keys if k.value and DIGIT.search(k.key)} - mine
    qualifiers = _qualifiers(new) ^ _qualifiers(old)
    return {
        "changed": float(changed(new, old)),
        "rule_update": float(verdict is not None and verdict.kind == "update"),
        "rule_distinct": float(verdict is not None and verdict.kind == "distinct"),
        "cosine": 0.0 if cosine is None else float(cosine),
        "announced": float(bool(new.cues - old.cues) or (new.reverses and old.decided)),
        "retires": float(bool(retiring & theirs) or new.handed),
        "coverage": len(shared) / len(theirs) if theirs else 0.0,
        "jaccard": len(shared) / len(mine | theirs) if mine | theirs else 0.0,
        "head_named": float(subject is not None and subject in mine),
        "number_changed": float(bool(numbers_new and numbers_old)),
        "qualifier_changed": float(bool(qualifiers)),
        "additive": float(new.additive),
        "flipped": float(new.negated != old.negated),
        "new_head": float(new.headed and bool(new.keys) and new.keys[0].key not in theirs),
        "subject_swap": _subject_swap(new, old),
    }


def changed(new: Features, old: Features) -> bool:
    """Whether the new text can replace the old one at all: it says something the old does not
    (a key the old lacks, the other polarity, a value retired) and names no other environment,
    region or label than the old one does. A restatement ("PostgreSQL 15 is what our database
    runs" of "Our database is PostgreSQL 15") replaces nothing, however close its words and
    vector; a statement about production says nothing of development."""
    mine = {k.key for k in new.keys if not k.relation}
    theirs = {k.key for k in old.keys}
    said = bool(mine - theirs) or new.negated != old.negated or bool(new.retired - old.retired)
    return said and not _qualifiers(new) ^ _qualifiers(old)


def _qualifiers(found: Features) -> set[str]:
    return {k.key for k in found.keys if k.qualifier}


def _parts(key: str) -> set[str]:
    """A key and its parts: "per-key" also names "per" and "key", "300/min" "300" and "min"."""
    return {key, *(part for part in _SPLIT.split(key) if part)}


def _subject_swap(new: Features, old: Features) -> float:
    """Each text names, at its head, a thing the other does not name anywhere: before its first
    number the other lacks, or in its first three keys when it has none ("the marketing site runs
    Next.js 13" / "the customer portal was upgraded to Next.js 14"; "the orders table is
    partitioned by month" / "the events table ... by day")."""
    mine = set().union(*(_parts(k.key) for k in new.keys))
    theirs = set().union(*(_parts(k.key) for k in old.keys))

    def head(found: Features, other: set[str]) -> set[str]:
        end = _first_changed(found, other)
        keys = found.keys[: HEAD_KEYS if end is None else end]
        words = set().union(*(_parts(k.key) for k in keys if not k.relation))
        return {w for w in words - other if not DIGIT.search(w) and w not in STOP_PARTS}

    return float(bool(head(new, theirs) and head(old, mine)))


def _first_changed(found: Features, other: set[str]) -> int | None:
    """The index of the text's first key with a digit that the other text does not hold."""
    return next(
        (
            i
            for i, k in enumerate(found.keys)
            if k.value and DIGIT.search(k.key) and not _parts(k.key) <= other
        ),
        None,
    )
