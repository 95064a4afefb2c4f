"""Fusion and rerank signals: each one moves results the way it should; refusal; spreading."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from worker.errors import ConfigError
from worker.retrieval import ranking
from worker.retrieval.ranking import DAY_MS, Candidate, Weights
from worker.retrieval.when import date_ranges
from worker.settings import Settings, load_settings

NOW = 1_800_000_000_000
W = Weights.from_settings(Settings())


def item(kind: str = "observation", **fields: Any) -> dict[str, Any]:
    base = {
        "kind": kind,
        "created_at": NOW,
        "retrieval_count": 0,
        "importance": 2,
        "pinned": False,
        "project_id": 1,
    }
    base.update(fields)
    return base


def order(items: dict[tuple[str, int], dict[str, Any]], **kw: Any) -> list[int]:
    """Two candidates with equal fused relevance: only the signals decide."""
    cands = [Candidate(ref, fused=0.5) for ref in items]
    ranked = ranking.rank(
        cands,
        items,
        now=NOW,
        project_id=kw.get("project_id", 1),
        stale=kw.get("stale", set()),
        weights=kw.get("weights", W),
        dates=kw.get("dates"),
    )
    return [c.ref[1] for c in ranked]


def test_convex_fusion_rewards_agreement_and_weights_the_lists() -> None:
    a, b, c = ("memory", 1), ("memory", 2), ("memory", 3)
    fused = ranking.fuse([(a, 9.0), (b, 9.0), (c, 1.0)], [(b, 0.9), (a, 0.5), (c, 0.4)], W)
    assert fused[b].fused > fused[a].fused > fused[c].fused
    keyword_only = replace(W, vector=0.0)
    fused = ranking.fuse([(a, 9.0)], [(c, 0.9)], keyword_only)
    assert fused[c].fused == 0.0 and fused[a].fused > 0


def test_convex_fusion_keeps_a_clear_keyword_winner_on_top() -> None:
    """BM25 puts `a` far ahead; `b` is second by keyword and first by a hair by cosine. Rank
    fusion lets `b`'s two good places win; the normalised scores see how far ahead `a` is."""
    a, b = ("memory", 1), ("memory", 2)
    keyword = [(a, 20.0), (b, 6.0)] + [(("memory", 10 + i), 5.0 - i / 10) for i in range(20)]
    vector = [(b, 0.62), (("memory", 99), 0.61)] + [
        (("memory", 100 + i), 0.6 - i / 100) for i in range(20)
    ]
    vector.append((a, 0.35))
    convex = ranking.fuse(keyword, vector, W)
    assert convex[a].fused > convex[b].fused
    rrf = ranking.fuse(keyword, vector, replace(W, method="rrf", keyword=1.0, vector=0.5))
    assert rrf[b].fused > rrf[a].fused


def test_convex_fusion_follows_score_gaps_not_places() -> None:
    a, b, c = ("memory", 1), ("memory", 2), ("memory", 3)
    close = ranking.fuse([(a, 10.0), (b, 9.9), (c, 1.0)], [], W)
    far = ranking.fuse([(a, 10.0), (b, 1.1), (c, 1.0)], [], W)
    assert close[b].fused > 0.9 * close[a].fused
    assert far[b].fused < 0.1 * far[a].fused


def test_the_weakest_keyword_match_outranks_an_item_that_matches_no_word() -> None:
    """A keyword list holding every match is scaled from 0 (no query word), not from its
    weakest match: a body that names the query once still counts against a vector-only hit
    as close by cosine. A list cut at the candidate limit keeps min-max (missing items score
    at most its lowest)."""
    strong, weak, unrelated = ("observation", 1), ("observation", 2), ("observation", 3)
    keyword, vector = [(strong, 2.4), (weak, 1.1)], [(weak, 0.3), (unrelated, 0.3)]
    fused = ranking.fuse(keyword, vector, W, keyword_complete=True)
    assert fused[weak].fused > fused[unrelated].fused
    assert fused[weak].fused == pytest.approx(W.keyword * 1.1 / 2.4 + W.vector)
    cut = ranking.fuse(keyword, vector, W)
    assert cut[weak].fused == pytest.approx(W.vector) == cut[unrelated].fused
    assert ranking.min_max([2.0, 1.0], 0.0) == [1.0, 0.5]


def test_min_max_normalisation() -> None:
    assert ranking.min_max([]) == []
    assert ranking.min_max([3.0, 3.0]) == [1.0, 1.0]
    assert ranking.min_max([4.0, 3.0, 2.0]) == [1.0, 0.5, 0.0]


def test_fusion_method_is_validated() -> None:
    assert load_settings({"CAIRN_FUSION_METHOD": "rrf"}).ranking.fusion_method == "rrf"
    with pytest.raises(ConfigError, match="CAIRN_FUSION_METHOD"):
        load_settings({"CAIRN_FUSION_METHOD": "borda"})


def test_recency_prefers_newer() -> None:
    items = {("observation", 1): item(created_at=NOW - 60 * DAY_MS), ("observation", 2): item()}
    assert order(items) == [2, 1]


def test_recency_half_life_is_per_kind() -> None:
    assert ranking.recency("memory", NOW - 30 * DAY_MS, NOW, W) > ranking.recency(
        "observation", NOW - 30 * DAY_MS, NOW, W
    )
    assert abs(ranking.recency("observation", NOW - 14 * DAY_MS, NOW, W) - 0.5) < 1e-9


def test_frequency_importance_pinning_move_items_up() -> None:
    assert order({("memory", 1): item(), ("memory", 2): item(retrieval_count=20)}) == [2, 1]
    assert order({("memory", 1): item(), ("memory", 2): item(importance=5)}) == [2, 1]
    assert order({("memory", 1): item(importance=3), ("memory", 2): item(pinned=True)}) == [2, 1]
    assert ranking.frequency(10**9) == 1.0 and ranking.frequency(0) == 0.0


def test_stale_observation_is_penalised() -> None:
    items = {("observation", 1): item(), ("observation", 2): item()}
    assert order(items, stale={("observation", 1)}) == [2, 1]
    assert order(items, stale={("observation", 2)}) == [1, 2]


def test_same_project_beats_global() -> None:
    items = {("memory", 1): item(project_id=None), ("memory", 2): item(project_id=1)}
    assert order(items) == [2, 1]


def test_named_date_favours_items_from_then() -> None:
    may = 1_683_000_000_000  # 2023-05-02
    items = {
        ("memory", 1): item(created_at=may + 200 * DAY_MS),
        ("memory", 2): item(created_at=may),
    }
    assert order(items, dates=date_ranges("what happened in May 2023?")) == [2, 1]


def test_named_date_outweighs_a_better_match_from_another_time() -> None:
    may = 1_683_000_000_000  # 2023-05-02
    items = {
        ("memory", 1): item(created_at=may + 200 * DAY_MS),
        ("memory", 2): item(created_at=may),
    }
    cands = [Candidate(("memory", 1), fused=1.0), Candidate(("memory", 2), fused=0.3)]
    ranked = ranking.rank(
        cands, items, now=NOW, project_id=1, stale=set(), weights=W, dates=date_ranges("May 2023")
    )
    assert [c.ref[1] for c in ranked] == [2, 1]


def test_relevance_dominates_small_signals() -> None:
    items = {("memory", 1): item(importance=5), ("memory", 2): item()}
    cands = [Candidate(("memory", 1), fused=0.1), Candidate(("memory", 2), fused=0.5)]
    ranked = ranking.rank(cands, items, now=NOW, project_id=1, stale=set(), weights=W)
    assert [c.ref[1] for c in ranked] == [2, 1]
    assert abs(sum(ranked[0].signals.values()) - ranked[0].score) < 1e-5


def test_spread_lends_score_to_thread_neighbours() -> None:
    hit, before, after = ("memory", 5), ("memory", 4), ("memory", 6)
    cands = {hit: Candidate(hit, fused=1.0)}
    ranking.spread(cands, {hit: (before, after)}, W)
    assert cands[before].fused == W.prev and cands[after].fused == W.next
    assert cands[hit].fused == 1.0


def test_coverage_weights_rare_words() -> None:
    df = {"carolin": 0, "support": 40, "group": 50}
    groups = [("carolin",), ("support",), ("group",)]
    with_name = ranking.coverage(groups, {"carolin", "group"}, df, 1000)
    without_name = ranking.coverage(groups, {"support", "group"}, df, 1000)
    assert with_name > 0.5 > without_name
    # An unused Italian alternative does not count as a missing rare word.
    assert ranking.coverage([("deploy", "deploying")], {"deploy"}, {"deploy": 3}, 100) == 1.0


def test_refusal_rule() -> None:
    s = Settings()
    assert ranking.refuse(0.0, None, s)
    assert ranking.refuse(
        s.judgment.refusal_min_coverage - 0.01, s.judgment.refusal_min_cosine - 0.01, s
    )
    assert not ranking.refuse(s.judgment.refusal_min_coverage, None, s)
    assert not ranking.refuse(0.0, s.judgment.refusal_min_cosine, s)


def test_said_nothing_is_a_silent_success_only() -> None:
    ok = {"kind": "observation", "type": "command", "title": "Run: fmt", "body": "command: x"}
    assert ranking.said_nothing(ok)
    assert not ranking.said_nothing({**ok, "body": "command: x\nstdout: 3 files changed"})
    assert not ranking.said_nothing({**ok, "title": "Run: fmt (exit 3)"})
    assert not ranking.said_nothing({**ok, "type": "file_write"})
