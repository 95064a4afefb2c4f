"""An item's record of use as log-odds on its relevance (worker/memory/usefulness.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.memory.usefulness import DAY_MS, likeness_weight, shift, shifts
from worker.settings import Settings, load_settings

pytestmark = pytest.mark.sqlite_only("pure functions: no database")

NOW = 1_000 * DAY_MS
S: Settings = load_settings({"CAIRN_HOME": "/nonexistent"})
E = S.learning.evidence
FLOOR = S.judgment.refusal_min_cosine


def test_no_record_moves_nothing() -> None:
    assert shift([], NOW, S) == 0.0
    assert shifts({}, {}, S, NOW) == {}


def test_each_outcome_moves_the_odds_by_the_evidence() -> None:
    assert shift([("used", NOW, None)], NOW, S) == pytest.approx(E)
    assert shift([("ignored", NOW, None)] * 3, NOW, S) == pytest.approx(-3 * E)
    assert shift([("contradicted", NOW, None)], NOW, S) == pytest.approx(-2 * E)
    assert shift([("used", NOW, None), ("ignored", NOW, None)], NOW, S) == pytest.approx(0.0)


def test_old_evidence_fades_back_to_neutral() -> None:
    half = S.learning.half_life_days
    aged = shift([("ignored", NOW - int(half * DAY_MS), None)], NOW, S)
    assert aged == pytest.approx(-E / 2)
    assert abs(shift([("ignored", NOW - 3650 * DAY_MS, None)], NOW, S)) < 1e-9


def test_a_pinned_item_is_never_moved_down() -> None:
    assert shift([("ignored", NOW, None)] * 5, NOW, S, pinned=True) == 0.0
    assert shift([("used", NOW, None)], NOW, S, pinned=True) == pytest.approx(E)
    items = {("memory", 1): {"pinned": True}, ("memory", 2): {"pinned": False}}
    history = {ref: [("ignored", NOW, None)] for ref in items}
    assert shifts(history, items, S, NOW) == {("memory", 1): 0.0, ("memory", 2): -E}


def test_use_at_a_prompt_like_this_one_counts_most() -> None:
    # Used at prompt 1, ignored at prompts 2 and 3.
    rows = [("used", NOW, 1), ("ignored", NOW, 2), ("ignored", NOW, 3)]
    like_the_use = shift(rows, NOW, S, {1: 0.95, 2: 0.2, 3: 0.3})
    like_the_others = shift(rows, NOW, S, {1: 0.2, 2: 0.9, 3: 0.8})
    assert like_the_use > 0 > like_the_others
    # A prompt without a vector, or about something else, is no evidence at a prompt.
    assert shift([("used", NOW, None), ("used", NOW, 7)], NOW, S, {}) == 0.0
    assert shift([("ignored", NOW, 1)], NOW, S, {1: FLOOR - 0.1}) == 0.0


@given(st.floats(-1.0, 1.0), st.floats(0.0, 0.95))
def test_likeness_weight_is_a_share(cosine: float, floor: float) -> None:
    weight = likeness_weight(cosine, floor)
    assert 0.0 <= weight <= 1.0 and math.isfinite(weight)
    assert likeness_weight(1.0, floor) == 1.0 and likeness_weight(floor, floor) == 0.0
