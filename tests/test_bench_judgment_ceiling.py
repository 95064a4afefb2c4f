"""bench/judgment_ceiling.py: the AUC and the share of markers a closeness cut could reach while
unrelated prompts stay silent, on a hand-built explain record."""

from __future__ import annotations

from typing import Any

import pytest

from bench.judgment_ceiling import auc, ceiling


def _cand(cosine: float, good: bool = False, found: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"features": {"cosine": cosine, "clause": 0.0}, "good": good, "found": list(found)}


def _probe(category: str, markers: int, *cands: dict[str, Any]) -> dict[str, Any]:
    return {"category": category, "markers": markers, "candidates": list(cands)}


def test_auc_counts_wins_and_half_ties() -> None:
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5], [0.5]) == 0.5


def test_the_cut_is_what_leaves_nine_in_ten_unrelated_prompts_silent() -> None:
    unrelated = [_probe("none", 0, _cand(c / 10)) for c in range(10)]  # best 0.0 .. 0.9
    probes = [
        *unrelated,
        # Its marker sits above every unrelated prompt's best: reachable.
        _probe("fact", 1, _cand(0.95, True, ("m1",)), _cand(0.2)),
        # Its marker sits below the cut: a closeness cut cannot give it without noise.
        _probe("paraphrase", 1, _cand(0.3, True, ("m2",)), _cand(0.25)),
    ]
    table = ceiling(probes)
    assert table["fact"]["cut"] == pytest.approx(0.9)
    assert table["fact"]["reachable"] == 1.0 and table["fact"]["auc"] == 1.0
    assert table["paraphrase"]["reachable"] == 0.0
    assert table["paraphrase"]["auc"] == pytest.approx(0.35)  # above 0.0 .. 0.2, tie at 0.3


def test_no_unrelated_probe_is_an_error() -> None:
    with pytest.raises(SystemExit):
        ceiling([_probe("fact", 1, _cand(0.5, True, ("m",)))])
