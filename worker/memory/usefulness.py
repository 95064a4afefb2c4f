"""How useful an item has proved: a smoothed rate of use that fades back to neutral.

Each judged injection of an item (worker/memory/use.py) is evidence: used, or not (ignored; a
contradiction counts as `CONTRADICTION_WEIGHT` injections not used). Each weighs
0.5 ** (age / half-life), so old evidence fades. The estimate is the Beta-smoothed rate

    u = (used + s * p) / (shown + s)

with `p` the install's own rate of use (what an item with no history is assumed to have: a
neutral item) and `s` the prior's strength in injections. At a prompt, each injection counts by
how alike the prompt it was given at is to the one asked now (the square of their cosine):
what was used for this kind of question rises, what was ignored for it fades, and use for
something else says little. The relevance decision adds logit(u) - logit(p) to an item's
log-odds (retrieval/search.py): zero without evidence (a new item is never buried for lack of
history), positive for an item used more than most, negative for one given many times and never
used; never negative for a pinned item. Pure functions but `install_rate`, which reads the store.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from worker.settings import Settings
from worker.store import use as use_store
from worker.store.db import AnyDb
from worker.store.items import Ref

DAY_MS = 86_400_000
# The install's rate of use is taken over this window.
RATE_WINDOW_MS = 90 * DAY_MS
CONTRADICTION_WEIGHT = 2.0
# The install's rate of use is itself smoothed towards a half (one used, one not, assumed).
RATE_PRIOR = (1.0, 2.0)


@dataclass(frozen=True)
class Record:
    used: float  # faded weight of the injections used
    shown: float  # faded weight of all judged injections (contradictions counted double)


def record(
    history: Iterable[tuple[str, int, int | None]],
    now: int,
    half_life_days: float,
    likeness: Mapping[int, float] | None = None,
) -> Record:
    """The faded evidence of an item's judged injections (outcome, decided_at, prompt id).
    With `likeness` (prompt id -> cosine of that prompt with the one asked now), each injection
    counts by how alike its prompt was: its squared cosine (0 below zero), so use at a prompt
    about the same thing counts almost whole and at a prompt about something else (cosine 0.3)
    a tenth; an injection whose prompt has no vector does not count then."""
    used = shown = 0.0
    for outcome, at, prompt in history:
        age_days = max(0.0, (now - at) / DAY_MS)
        weight = 0.5 ** (age_days / half_life_days) if half_life_days > 0 else 1.0
        if likeness is not None:
            cosine = likeness.get(prompt) if prompt is not None else None
            weight *= max(0.0, cosine) ** 2 if cosine is not None else 0.0
        if outcome == "used":
            used += weight
            shown += weight
        elif outcome == "contradicted":
            shown += CONTRADICTION_WEIGHT * weight
        else:
            shown += weight
    return Record(used, shown)


def base_rate(used: int, judged: int) -> float:
    """The install's rate of use, smoothed: a half before any evidence."""
    return (used + RATE_PRIOR[0]) / (judged + RATE_PRIOR[1])


def estimate(rec: Record, rate: float, strength: float) -> float:
    return (rec.used + strength * rate) / (rec.shown + strength)


def shift(rec: Record, rate: float, strength: float, pinned: bool = False) -> float:
    """Log-odds to add to the item's relevance: logit(estimate) - logit(rate)."""
    if rec.shown <= 0.0 or strength <= 0.0:
        return 0.0
    value = _logit(estimate(rec, rate, strength)) - _logit(rate)
    return max(value, 0.0) if pinned else value


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def shifts(
    history: Mapping[Ref, Sequence[tuple[str, int, int | None]]],
    items: Mapping[Ref, Mapping[str, Any]],
    rate: float,
    settings: Settings,
    now: int,
    likeness: Mapping[int, float] | None = None,
) -> dict[Ref, float]:
    """Each item's usefulness as log-odds to add to its relevance (absent: no evidence)."""
    learning = settings.learning
    out: dict[Ref, float] = {}
    for ref, rows in history.items():
        rec = record(rows, now, learning.half_life_days, likeness)
        pinned = bool((items.get(ref) or {}).get("pinned"))
        out[ref] = shift(rec, rate, learning.prior_strength, pinned)
    return out


def install_rate(conn: AnyDb, now: int) -> float:
    """The install's own rate of use over the last `RATE_WINDOW_MS`, smoothed."""
    used, judged = use_store.totals(conn, now - RATE_WINDOW_MS)
    return base_rate(used, judged)
