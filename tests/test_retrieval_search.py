"""worker.retrieval.search helpers: which query terms reach the FTS5 expression."""

from __future__ import annotations

from worker.retrieval.search import one_stem_per_part, selective_terms
from worker.terms import query_groups, query_terms


def test_one_stem_per_part_keeps_the_stem_found_in_more_items() -> None:
    text = "deploying funzioni"
    terms, groups = query_terms(text, 10), query_groups(text, 10)
    assert ("funzioni", "funzion") in groups  # English and Italian stems differ here
    # An Italian corpus: the Italian stem conflates more forms, so it is found in more items.
    chosen = one_stem_per_part(terms, groups, {"deploy": 5, "funzioni": 1, "funzion": 9})
    assert chosen == ["deploy", "funzion"]
    # An English one: the English stem wins.
    chosen = one_stem_per_part(terms, groups, {"deploy": 5, "funzioni": 4, "funzion": 2})
    assert chosen == ["deploy", "funzioni"]


def test_one_stem_per_part_prefers_english_on_a_tie_and_keeps_whole_identifiers() -> None:
    text = "getUserById lolo"
    terms, groups = query_terms(text, 10), query_groups(text, 10)
    assert "getuserbyid" in terms and ("lolo", "lol") in groups
    chosen = one_stem_per_part(terms, groups, {})
    assert chosen == ["getuserbyid", "get", "user", "id", "lolo"]


def test_a_stem_another_part_needs_is_kept() -> None:
    """'lol' is the Italian stem of 'lolo' and a part of its own: dropping it as lolo's
    alternative must not drop the query's own word."""
    text = "lolo lol"
    terms, groups = query_terms(text, 10), query_groups(text, 10)
    assert one_stem_per_part(terms, groups, {"lolo": 3, "lol": 1}) == ["lolo", "lol"]


def test_selective_terms_drop_words_found_in_most_items_but_keep_the_rarest() -> None:
    df = {"a": 90, "b": 5, "c": 0}
    assert selective_terms(["a", "b", "c"], df, 100, 0.2) == ["b"]
    assert selective_terms(["a"], df, 100, 0.2) == ["a"]
