"""Keyword-only relevance: scope-weighted coverage and strength (retrieval/keyword_judgment.py)."""

from __future__ import annotations

from worker.retrieval.keyword_judgment import ScopeFrequencies, evidence, item_relevant, refuse
from worker.settings import load_settings


def test_words_common_in_the_project_weigh_little_and_unknown_words_nothing() -> None:
    scope = ScopeFrequencies({"caroline": 50, "adopt": 2, "zebra": 0}, 100, {"caroline": 60,
        "adopt": 3, "zebra": 4})  # fmt: skip
    groups = [("caroline",), ("adopt",), ("zebra",), ("nowhere",)]
    found = evidence(groups, {"caroline", "adopt"}, scope)
    # "zebra" is in other projects only: it weighs the most; "nowhere" is in no item: ignored.
    assert 0.2 < found.coverage < 0.6
    assert (
        evidence([("caroline",), ("adopt",), ("nowhere",)], {"caroline", "adopt"}, scope).coverage
        == 1.0
    )


def test_memories_pass_a_looser_bar_than_observations() -> None:
    s = load_settings(env={})
    scope = ScopeFrequencies({"unwrap": 2, "tests": 10}, 100, {"unwrap": 2, "tests": 10})
    found = evidence([("unwrap",), ("tests",), ("file",)], {"tests"}, scope)
    assert item_relevant("memory", found, s, 100) and not item_relevant(
        "observation", found, s, 100
    )


def test_a_small_scope_lowers_the_strength_bar() -> None:
    """Three items about one subject: its words are in every item, so their IDF is near zero; a
    prompt they fully cover is still relevant there, and not in a large project."""
    s = load_settings(env={})
    scope = ScopeFrequencies({"stripe": 3, "webhook": 3}, 3, {"stripe": 3, "webhook": 3})
    found = evidence([("stripe",), ("webhook",)], {"stripe", "webhook"}, scope)
    assert found.coverage == 1.0 and found.strength < s.judgment.prompt_keyword_item_min_strength
    assert item_relevant("observation", found, s, 3)
    assert not item_relevant("observation", found, s, 500)
    assert refuse(0.1, s) and not refuse(0.5, s)
