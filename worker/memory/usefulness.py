"""How useful an item has proved at prompts like this one: evidence in log-odds that fades.

Each judged injection of an item (worker/memory/use.py) is evidence about whether the item
matters for the kind of question it was given at: used multiplies the odds by e^E, ignored
divides them by e^E, contradicted by e^2E (E = `CAIRN_LEARNING_EVIDENCE`, 2.2 ~ ln 9: an
injection used at the same question multiplies the odds by nine). Each counts

- by how alike the prompt it was given at is to the prompt asked now: (cos - c) / (1 - c) with
  `c` the refusal cosine (`CAIRN_REFUSAL_MIN_COSINE`, below which the model finds nothing
  related), so a paraphrase of the question counts most, a prompt about something else nothing;
- by its age: half every `CAIRN_LEARNING_HALF_LIFE_DAYS`, back to neutral in the end.

The sum is added to the item's log-odds in the relevance decision (retrieval/search.py). No
record, no move (a new item is never buried for lack of history); a pinned item is never moved
down; nothing is archived or deleted for being ignored. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from worker.settings import Settings
from worker.store.items import Ref
from worker.store.stats import DAY_MS

# How much an outcome weighs, in units of the evidence E: a correction says more than silence.
OUTCOME_WEIGHT = {"used": 1.0, "ignored": -1.0, "contradicted": -2.0}


def likeness_weight(cosine: float | None, floor: float) -> float:
    """How much an outcome at a prompt with this cosine to the one asked now counts (0..1)."""
    if cosine is None:
        return 0.0
    return max(0.0, min(1.0, (cosine - floor) / (1.0 - floor))) if floor < 1.0 else 0.0


def shift(
    history: Iterable[tuple[str, int, int | None]],
    now: int,
    settings: Settings,
    likeness: Mapping[int, float] | None = None,
    pinned: bool = False,
) -> float:
    """The log-odds an item's record adds to its relevance. `history`: (outcome, decided_at,
    prompt id); `likeness`: prompt id -> cosine with the prompt asked now (None: every outcome
    counts whole, as for an item's page)."""
    learning = settings.learning
    total = 0.0
    for outcome, at, prompt in history:
        age_days = max(0.0, (now - at) / DAY_MS)
        weight = 0.5 ** (age_days / learning.half_life_days) if learning.half_life_days > 0 else 1
        if likeness is not None:
            cosine = likeness.get(prompt) if prompt is not None else None
            weight *= likeness_weight(cosine, settings.judgment.refusal_min_cosine)
        total += OUTCOME_WEIGHT.get(outcome, 0.0) * weight
    value = learning.evidence * total
    return max(value, 0.0) if pinned else value


def shifts(
    history: Mapping[Ref, Sequence[tuple[str, int, int | None]]],
    items: Mapping[Ref, Mapping[str, Any]],
    settings: Settings,
    now: int,
    likeness: Mapping[int, float] | None = None,
) -> dict[Ref, float]:
    """Each item's shift (items without a record are absent)."""
    return {
        ref: shift(rows, now, settings, likeness, bool((items.get(ref) or {}).get("pinned")))
        for ref, rows in history.items()
    }
