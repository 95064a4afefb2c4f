"""Supersession over 84 pairs of coding-project memories (tests/data/supersession-pairs.json).

The aim (issue 19): >= 90% of real updates caught, <= 3% of distinct facts superseded, on the dev
pairs the rule was tuned on. The held-out pairs were never used to tune it: their test only keeps
the figures from slipping below what they were when the rule was written (7/10 caught, 1/10
wrong; before it, 3/10 and 1/10 by the words alone, 5/10 and 2/10 with the real model).
The figures: `.venv/bin/python -m tests.supersession_pairs`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.supersession_pairs import Score, cosines, load_pairs, score
from tests.vector_margins import MARGIN
from worker.retrieval.embedder import DEFAULT_MODEL, FakeEmbedder, load_embedder
from worker.settings import Settings
from worker.store import Store

AIM_CAUGHT = 0.90
AIM_WRONG = 0.03


def assert_aims(result: Score, what: str) -> None:
    line = result.line(what)
    detail = f"{line}\n  missed {result.missed_ids}, wrongly superseded {result.wrong_ids}"
    assert result.caught_share >= AIM_CAUGHT, detail
    assert result.wrong_share <= AIM_WRONG, detail


def test_the_pairs_are_a_fair_test() -> None:
    pairs = load_pairs()
    dev = load_pairs("dev")
    assert len(dev) >= 60 and {p["split"] for p in pairs} == {"dev", "held-out"}
    for split in ("dev", "held-out"):
        labels = [p["label"] for p in load_pairs(split)]
        assert labels.count("update") == labels.count("distinct")
    assert len({p["id"] for p in pairs}) == len(pairs)
    assert len({(p["old"], p["new"]) for p in pairs}) == len(pairs)


def test_dev_pairs_by_their_words(store: Store, settings: Settings) -> None:
    """No model loaded: the lexical decision alone; then with the fake embedder's cosines, which
    put every pair sharing words close (the vector path must not add wrong supersessions)."""
    dev = load_pairs("dev")
    assert_aims(score(store, settings, dev, run="words"), "dev, words only")
    fake = cosines(FakeEmbedder(), dev)
    assert_aims(score(store, settings, dev, fake, run="fake"), "dev, fake embedder")


@pytest.mark.model
@pytest.mark.parametrize("kernel", ["int8", "float32"])
def test_dev_pairs_with_the_real_model(
    store: Store, settings: Settings, shared_models: Path, kernel: str
) -> None:
    """The real model's cosines moved MARGIN the wrong way (down for updates, up for distinct
    pairs): what a CPU whose int8 kernel moves them that far would see at worst."""
    embedder = load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=kernel == "int8")
    dev = load_pairs("dev")
    real = cosines(embedder, dev)
    assert_aims(score(store, settings, dev, real, run=kernel), f"dev, {kernel}")
    worst = score(store, settings, dev, real, shift=MARGIN, run=f"{kernel}-worst")
    assert_aims(worst, f"dev, {kernel}, cosines -/+{MARGIN}")


@pytest.mark.model
def test_held_out_pairs_do_not_slip(store: Store, settings: Settings, shared_models: Path) -> None:
    held = load_pairs("held-out")
    embedder = load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=True)
    real = cosines(embedder, held)
    for result, what in (
        (score(store, settings, held, run="words"), "held-out, words only"),
        (score(store, settings, held, real, shift=MARGIN, run="worst"), "held-out, int8 worst"),
    ):
        assert result.caught >= 7 and result.wrong <= 1, result.line(what)


def test_fresh_pairs_by_their_words(store: Store, settings: Settings) -> None:
    """The second dev set (tests/data/supersession-pairs-fresh.json), kept at what the rule reaches
    (37/37 caught, 0/37 wrong): wrong supersessions must stay at none; the blind sets are only
    scored (`python -m tests.supersession_pairs --set blind1`), never asserted."""
    fresh = load_pairs("fresh")
    labels = [p["label"] for p in fresh]
    assert len(fresh) >= 70 and labels.count("update") == labels.count("distinct")
    result = score(store, settings, fresh, run="fresh")
    assert result.caught >= 37 and result.wrong == 0, result.line("fresh, words only")


def test_extra_pairs_by_their_words(store: Store, settings: Settings) -> None:
    """The third dev set (tests/data/supersession-pairs-extra.json, written before it was scored:
    22/37 caught, 3/37 wrong then), kept at what the rule reaches: 37/37 caught, none wrong."""
    extra = load_pairs("extra")
    labels = [p["label"] for p in extra]
    assert len(extra) >= 60 and labels.count("update") == labels.count("distinct")
    result = score(store, settings, extra, run="extra")
    assert result.caught >= 37 and result.wrong == 0, result.line("extra, words only")


def test_extra2_pairs_by_their_words(store: Store, settings: Settings) -> None:
    """The fourth dev set (tests/data/supersession-pairs-extra2.json), scored once before it was
    tuned on (14/20 caught, 2/20 wrong), kept at what the rule reaches: 20/20, none wrong."""
    extra2 = load_pairs("extra2")
    labels = [p["label"] for p in extra2]
    assert len(extra2) >= 40 and labels.count("update") == labels.count("distinct")
    result = score(store, settings, extra2, run="extra2")
    assert result.caught >= 20 and result.wrong == 0, result.line("extra2, words only")


def test_extra3_pairs_by_their_words(store: Store, settings: Settings) -> None:
    """The fifth dev set (tests/data/supersession-pairs-extra3.json), written for the categories
    the kept-apart sets missed and scored before the rule changed (11/20 caught, 5/20 wrong then),
    kept at what the rule reaches: 39/45, none wrong."""
    extra3 = load_pairs("extra3")
    labels = [p["label"] for p in extra3]
    assert len(extra3) >= 80 and labels.count("update") == labels.count("distinct")
    result = score(store, settings, extra3, run="extra3")
    assert result.caught >= 39 and result.wrong == 0, result.line("extra3, words only")
