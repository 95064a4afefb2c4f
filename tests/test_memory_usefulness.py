"""An item's record of use as log-odds on its relevance (worker/memory/usefulness.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.memory.usefulness import (
    DAY_MS,
    Record,
    base_rate,
    estimate,
    record,
    shift,
)

pytestmark = pytest.mark.sqlite_only("pure functions: no database")

NOW = 1_000 * DAY_MS


def test_no_evidence_moves_nothing() -> None:
    assert shift(Record(0.0, 0.0), 0.3, 2.0) == 0.0
    assert base_rate(0, 0) == 0.5


def test_used_items_rise_and_ignored_ones_fall() -> None:
    rate = 0.3
    used = record([("used", NOW, None), ("used", NOW, None)], NOW, 30.0)
    ignored = record([("ignored", NOW, None)] * 4, NOW, 30.0)
    assert shift(used, rate, 2.0) > 0.5
    assert shift(ignored, rate, 2.0) < -0.5
    # One ignored injection is weaker evidence than four.
    assert (
        shift(ignored, rate, 2.0)
        < shift(record([("ignored", NOW, None)], NOW, 30.0), rate, 2.0)
        < 0
    )


def test_a_contradiction_weighs_more_than_silence() -> None:
    contradicted = record([("contradicted", NOW, None)], NOW, 30.0)
    ignored = record([("ignored", NOW, None)], NOW, 30.0)
    assert shift(contradicted, 0.3, 2.0) < shift(ignored, 0.3, 2.0)


def test_old_evidence_fades_back_to_neutral() -> None:
    fresh = record([("ignored", NOW, None)] * 3, NOW, 30.0)
    old = record([("ignored", NOW - 300 * DAY_MS, None)] * 3, NOW, 30.0)
    assert abs(shift(old, 0.3, 2.0)) < 0.01 < abs(shift(fresh, 0.3, 2.0))


def test_a_pinned_item_is_never_demoted() -> None:
    ignored = record([("ignored", NOW, None)] * 5, NOW, 30.0)
    assert shift(ignored, 0.3, 2.0, pinned=True) == 0.0
    used = record([("used", NOW, None)], NOW, 30.0)
    assert shift(used, 0.3, 2.0, pinned=True) == shift(used, 0.3, 2.0) > 0


@given(
    used=st.floats(0, 50),
    extra=st.floats(0, 50),
    rate=st.floats(0.01, 0.99),
    strength=st.floats(0.1, 10),
)
def test_the_estimate_lies_between_the_prior_and_the_observed_rate(
    used: float, extra: float, rate: float, strength: float
) -> None:
    rec = Record(used, used + extra)
    u = estimate(rec, rate, strength)
    if rec.shown > 0:
        observed = rec.used / rec.shown
        assert min(rate, observed) - 1e-9 <= u <= max(rate, observed) + 1e-9
        assert math.isfinite(shift(rec, rate, strength))


def test_use_at_a_prompt_like_this_one_counts_most() -> None:
    # The item was used at prompt 1 and ignored at prompts 2 and 3.
    rows = [("used", NOW, 1), ("ignored", NOW, 2), ("ignored", NOW, 3)]
    like_the_use = record(rows, NOW, 30.0, {1: 0.9, 2: 0.2, 3: 0.1})
    like_the_others = record(rows, NOW, 30.0, {1: 0.1, 2: 0.9, 3: 0.8})
    assert shift(like_the_use, 0.5, 2.0) > 0 > shift(like_the_others, 0.5, 2.0)
    # A prompt without a vector, or none at all, is no evidence at a prompt.
    assert record([("used", NOW, None), ("used", NOW, 7)], NOW, 30.0, {}) == Record(0.0, 0.0)
