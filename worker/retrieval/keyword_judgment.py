"""Relevance on words alone: the judgment search uses when no query vector is at hand.

Keyword-only mode (the model still loading, disabled with CAIRN_EMBED_ENABLED=0, or unable to
load) has no cosine to tell a relevant item from a chance match. The refusal rule tuned for the
hybrid case (an item holding 80% of the query's weight, or a close vector) then refuses almost
every answerable question. Here an item is judged by how much of the prompt it holds, each word
weighted by its IDF *within the searched scope* (the project's items and the global ones):

- a word common in this project (its name, a speaker's name, "test") weighs little, so an item
  need not repeat it;
- a word that occurs nowhere in the project but in other projects (a name from another
  project) weighs the most, so a prompt about something the project never saw stays unanswered;
- a word found in no item at all (a date, a typo, a word nobody wrote) tells nothing about
  this project against any other, and is left out.

Two figures per item: coverage (the matched share of the prompt's weight, 0..1) and strength
(the matched weight itself: a one-word prompt fully covered by a common word is still weak).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from worker.retrieval.db_keywords import KeywordScorer
from worker.retrieval.ranking import idf
from worker.settings import Settings
from worker.store.db import AnyDb


@dataclass(frozen=True)
class ScopeFrequencies:
    """Document frequencies of the prompt's terms among the rows a search may return."""

    df: Mapping[str, int]
    rows: int
    # Frequencies over every project: a word found nowhere weighs nothing.
    everywhere: Mapping[str, int]


@dataclass(frozen=True)
class Evidence:
    coverage: float
    strength: float


def scope_frequencies(
    index: KeywordScorer,
    groups: list[tuple[str, ...]],
    project_id: int | None,
    everywhere: Mapping[str, int],
    conn: AnyDb | None = None,
) -> ScopeFrequencies:
    """Frequencies within the project and the global items, from the keyword index (in memory:
    called after the search's keyword pass, which loaded it and brought it up to date; or the
    team database's counters, read on `conn`)."""
    terms = sorted({t for group in groups for t in group})
    df, rows = index.scope_frequencies(terms, project_id, conn)
    return ScopeFrequencies(df, rows, everywhere)


def evidence(
    groups: list[tuple[str, ...]], doc_terms: set[str], scope: ScopeFrequencies
) -> Evidence:
    """How much of the prompt one item holds. A word part's alternatives (its English and
    Italian stems) weigh as the most frequent of them, as in ranking.coverage."""
    total = covered = 0.0
    for group in groups:
        if not any(scope.everywhere.get(t, 0) for t in group):
            continue
        weight = idf(max(scope.df.get(t, 0) for t in group), scope.rows)
        total += weight
        if any(t in doc_terms for t in group):
            covered += weight
    return Evidence(covered / total if total > 0 else 0.0, covered)


def best_coverage(
    groups: list[tuple[str, ...]], indexed: Iterable[str], scope: ScopeFrequencies
) -> float:
    """The highest coverage among these items (their analysed text, as in the index)."""
    return max(
        (evidence(groups, set(text.split()), scope).coverage for text in indexed), default=0.0
    )


def refuse(coverage: float, settings: Settings) -> bool:
    """A query is unanswered when no top keyword hit holds enough of its scope-weighted words."""
    return coverage < settings.judgment.keyword_refusal_min_coverage


# Below this many items in scope, IDF cannot tell a common word from a rare one (in a project of
# three items about one subject every word of that subject is "common"), so the matched-weight
# bar grows from nothing to its setting as the scope grows to this size.
STRENGTH_FULL_AT_ROWS = 50


def item_relevant(kind: str, found: Evidence, settings: Settings, rows: int) -> bool:
    """Whether one item is worth injecting at a prompt on its words alone. Explicit memories
    (few, high value) pass a looser bar than raw activity (observations, prompts, summaries).
    `rows` is the size of the searched scope (ScopeFrequencies.rows)."""
    if kind == "memory":
        min_coverage = settings.judgment.prompt_keyword_memory_min_coverage
        min_strength = settings.judgment.prompt_keyword_memory_min_strength
    else:
        min_coverage = settings.judgment.prompt_keyword_item_min_coverage
        min_strength = settings.judgment.prompt_keyword_item_min_strength
    min_strength *= min(1.0, rows / STRENGTH_FULL_AT_ROWS)
    return found.coverage >= min_coverage and found.strength >= min_strength
