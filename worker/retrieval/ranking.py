"""Fusion and ranking: convex combination of normalised scores (or weighted reciprocal rank
fusion), rerank signals, refusal. Pure functions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from worker.retrieval.when import time_match
from worker.settings import Settings

Ref = tuple[str, int]
DAY_MS = 86_400_000
FREQUENCY_SATURATION = 50  # retrievals at which the frequency signal reaches 1


@dataclass
class Candidate:
    ref: Ref
    keyword_rank: int | None = None
    keyword_score: float | None = None
    vector_rank: int | None = None
    cosine: float | None = None
    fused: float = 0.0
    score: float = 0.0
    signals: dict[str, float] = field(default_factory=dict)
    # The item's own evidence, set when items are judged one by one (the prompt context):
    # its own vector's cosine to the query, and the share of the query's words it holds.
    plain_cosine: float | None = None
    coverage: float | None = None
    # The relevance model's view of it at a prompt (retrieval/relevance.py): its features and
    # the probability that it matters.
    features: dict[str, float] | None = None
    relevance: float | None = None


@dataclass(frozen=True)
class Weights:
    method: str
    rrf_k: float
    keyword: float
    vector: float
    relevance: float
    recency: float
    frequency: float
    importance: float
    staleness: float
    project: float
    half_life_days: Mapping[str, float]
    prev: float = 0.0
    next: float = 0.0
    date: float = 0.0
    date_slack_days: float = 7.0

    @classmethod
    def from_settings(cls, s: Settings) -> Weights:
        return cls(
            method=s.ranking.fusion_method,
            rrf_k=s.ranking.fusion_rrf_k,
            keyword=s.ranking.fusion_keyword_weight,
            vector=s.ranking.fusion_vector_weight,
            relevance=s.ranking.relevance_weight,
            recency=s.ranking.recency_weight,
            frequency=s.ranking.frequency_weight,
            importance=s.ranking.importance_weight,
            staleness=s.ranking.staleness_weight,
            project=s.ranking.project_weight,
            prev=s.ranking.fusion_prev_weight,
            next=s.ranking.fusion_next_weight,
            date=s.ranking.date_weight,
            date_slack_days=s.ranking.date_slack_days,
            half_life_days={
                "observation": s.ranking.half_life_days_observation,
                "prompt": s.ranking.half_life_days_prompt,
                "summary": s.ranking.half_life_days_summary,
                "memory": s.ranking.half_life_days_memory,
            },
        )


def min_max(scores: list[float], floor: float | None = None) -> list[float]:
    """Scores mapped onto 0..1 from `floor` (default: the list's lowest) to the list's highest
    (all equal: all 1)."""
    if not scores:
        return []
    low, high = min(scores) if floor is None else min(floor, *scores), max(scores)
    if high <= low:
        return [1.0] * len(scores)
    return [(score - low) / (high - low) for score in scores]


def fuse(
    keyword: Iterable[tuple[Ref, float]],
    vector: Iterable[tuple[Ref, float]],
    weights: Weights,
    keyword_complete: bool = False,
) -> dict[Ref, Candidate]:
    """Fuse two best-first (ref, score) lists: BM25 scores and cosines.

    "convex": the weighted sum of each list's normalised scores, scaled from what an item
    missing from the list scores. A list cut at the candidate limit: its lowest score (min-max).
    A keyword list that holds every match (`keyword_complete`): 0, the BM25 of matching no
    word; scaled from its weakest match instead, that match (a body naming "ruff" once) would
    count no more than an item without the word and fall behind any vector-only hit.
    Unlike reciprocal rank fusion it keeps how far ahead a hit is, not only its place, so a
    clear BM25 winner is not overtaken by an item that is merely second in both lists (Bruch
    et al. 2022, "An Analysis of Fusion Functions for Hybrid Retrieval"). "rrf": weighted
    reciprocal rank fusion.
    """
    keyword, vector = list(keyword), list(vector)
    convex = weights.method == "convex"
    out: dict[Ref, Candidate] = {}
    keyword_norm = min_max([score for _, score in keyword], 0.0 if keyword_complete else None)
    for rank, ((ref, score), norm) in enumerate(zip(keyword, keyword_norm, strict=True)):
        cand = out.setdefault(ref, Candidate(ref))
        cand.keyword_rank, cand.keyword_score = rank, score
        cand.fused += weights.keyword * (norm if convex else 1 / (weights.rrf_k + rank + 1))
    vector_norm = min_max([cosine for _, cosine in vector])
    for rank, ((ref, cosine), norm) in enumerate(zip(vector, vector_norm, strict=True)):
        cand = out.setdefault(ref, Candidate(ref))
        cand.vector_rank, cand.cosine = rank, cosine
        cand.fused += weights.vector * (norm if convex else 1 / (weights.rrf_k + rank + 1))
    return out


def spread(
    candidates: dict[Ref, Candidate],
    links: Mapping[Ref, tuple[Ref | None, Ref | None]],
    weights: Weights,
) -> None:
    """Each linked hit lends a share of its fused score to its thread neighbours (in place)."""
    lent: dict[Ref, float] = {}
    for ref, (prev, nxt) in links.items():
        base = candidates[ref].fused if ref in candidates else 0.0
        if prev is not None:
            lent[prev] = lent.get(prev, 0.0) + weights.prev * base
        if nxt is not None:
            lent[nxt] = lent.get(nxt, 0.0) + weights.next * base
    for ref, amount in lent.items():
        if amount > 0:
            candidates.setdefault(ref, Candidate(ref)).fused += amount


def recency(kind: str, created_at: int, now: int, weights: Weights) -> float:
    half_life = weights.half_life_days.get(kind, 30.0)
    age_days = max(0.0, (now - created_at) / DAY_MS)
    return float(0.5 ** (age_days / half_life)) if half_life > 0 else 0.0


def frequency(retrievals: int) -> float:
    return min(1.0, math.log1p(max(0, retrievals)) / math.log1p(FREQUENCY_SATURATION))


def importance(item: Mapping[str, Any]) -> float:
    if item.get("pinned"):
        return 1.0
    return max(0.0, min(1.0, (int(item.get("importance") or 1) - 1) / 4))


def rank(
    candidates: Iterable[Candidate],
    items: Mapping[Ref, Mapping[str, Any]],
    *,
    now: int,
    project_id: int | None,
    stale: set[Ref],
    weights: Weights,
    dates: list[tuple[int, int]] | None = None,
) -> list[Candidate]:
    """Score each candidate (fused relevance scaled to 0..1 plus weighted signals), best first."""
    present = [c for c in candidates if c.ref in items]
    if not present:
        return []
    top = max(c.fused for c in present) or 1.0
    for cand in present:
        item = items[cand.ref]
        contributions = {
            "relevance": weights.relevance * cand.fused / top,
            "recency": weights.recency
            * recency(cand.ref[0], int(item["created_at"]), now, weights),
            "frequency": weights.frequency * frequency(int(item.get("retrieval_count") or 0)),
            "importance": weights.importance * importance(item),
            "staleness": -weights.staleness if cand.ref in stale else 0.0,
            "project": weights.project
            if project_id is not None and item.get("project_id") == project_id
            else 0.0,
            "date": weights.date
            * time_match(int(item["created_at"]), dates, weights.date_slack_days)
            if dates
            else 0.0,
        }
        cand.signals = contributions
        cand.score = sum(contributions.values())
    return sorted(present, key=lambda c: (-c.score, -c.fused, c.ref))


def rounded(signals: Mapping[str, float]) -> dict[str, float]:
    """Signals as shown to people (explain=true, the context preview)."""
    return {k: round(v, 6) for k, v in signals.items()}


def idf(df: int, n_docs: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def coverage(
    groups: list[tuple[str, ...]], doc_terms: set[str], df: Mapping[str, int], n_docs: int
) -> float:
    """IDF-weighted share of the query's word parts that a document contains (0..1).

    A part is weighted by its most common alternative (the stem that really occurs), so an
    English word's unused Italian stem does not count as a rare missing word; a part that occurs
    nowhere (a name from another project, a typo) weighs the most.
    """
    if not groups:
        return 0.0
    total = covered = 0.0
    for group in groups:
        weight = idf(max(df.get(t, 0) for t in group), n_docs)
        total += weight
        if any(t in doc_terms for t in group):
            covered += weight
    return covered / total if total > 0 else 0.0


def refuse(best_coverage: float, best_cosine: float | None, settings: Settings) -> bool:
    """Nothing is relevant: no document covers enough of the query and no vector is close."""
    if best_coverage >= settings.judgment.refusal_min_coverage:
        return False
    return not (best_cosine is not None and best_cosine >= settings.judgment.refusal_min_cosine)


def said_nothing(item: Mapping[str, Any]) -> bool:
    """A command that succeeded and printed nothing: it tells a reader nothing at a prompt."""
    if item.get("kind") != "observation" or item.get("type") != "command":
        return False
    if "(exit " in str(item.get("title") or ""):
        return False
    body = str(item.get("body") or "")
    return not any(
        line.strip().startswith(("stdout:", "stderr:", "error:")) and line.split(":", 1)[1].strip()
        for line in body.splitlines()
    )
