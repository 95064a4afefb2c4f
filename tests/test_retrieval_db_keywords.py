"""worker.retrieval.db_keywords: keyword search in the team database (GIN index, counters kept by
triggers) gives the in-memory index's frequencies, hits and scores, and reads only what it must."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from tests.search_corpus import write_corpus
from worker.retrieval.db_keywords import DatabaseKeywords
from worker.retrieval.keyword_index import KeywordIndex
from worker.store import memories, observations, projects
from worker.store.m002_retrieval import KIND_CODES
from worker.store.pg import PgStore
from worker.store.pg.m006_keyword_terms import analyse_stored

pytestmark = pytest.mark.postgres

TERM_SETS = [
    ["redi", "cach", "evict"],
    ["getuserbyid", "token"],
    ["nginx"],
    ["postgr", "pool", "exhaust"],  # a global memory's words
    ["flaki", "orderservic", "session", "cooki"],
    ["funzion", "configurazion"],
    ["webhook", "backoff", "retri", "nosuchterm"],
]


@pytest.fixture
def pg(pg_url: str) -> Iterator[PgStore]:
    store = PgStore(pg_url)
    store.open()
    yield store
    store.close()


def _loaded(store: PgStore) -> KeywordIndex:
    """The in-memory index built from the same database (as a worker did before migration 6)."""
    index = KeywordIndex()
    store.read_sync(index.load)
    return index


def _same_best(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> bool:
    """The same scores, in order, and the same rows above the last score (which rows of a tie
    at the cut the in-memory index keeps is numpy's argpartition's choice; the database's
    are the lowest rowids, the order ties are listed in)."""
    if [s for _, s in found] != [s for _, s in expected]:
        return False
    cut = found[-1][1] if found else 0.0
    above = [r for r, s in found if s > cut]
    return above == [r for r, s in expected if s > cut] and found == sorted(
        found, key=lambda pair: (-pair[1], pair[0])
    )


def _agree(store: PgStore, term_sets: list[list[str]], **top: Any) -> None:
    """Frequencies, scope frequencies and best rows (ids and scores, exactly) agree."""
    want, got = _loaded(store), DatabaseKeywords()
    pid = store.read_sync(lambda c: projects.find(c, "/repo"))
    for terms in term_sets:
        assert store.read_sync(lambda c, t=terms: got.frequencies(c, t)) == store.read_sync(
            lambda c, t=terms: want.frequencies(c, t)
        ), terms
        for project_id in (pid, None, 999):
            assert store.read_sync(
                lambda c, t=terms, p=project_id: got.scope_frequencies(t, p, c)
            ) == want.scope_frequencies(terms, project_id), (terms, project_id)
            for kinds in (None, [KIND_CODES["memory"]], [KIND_CODES["observation"], 3]):
                args = {
                    "project_id": project_id,
                    "kind_codes": kinds,
                    "limit": 5,
                    "title_weight": 3.0,
                    "body_weight": 1.0,
                    **top,
                }
                expected = want.top(terms, **args)
                found = store.read_sync(lambda c, t=terms, a=args: got.top(t, conn=c, **a))
                assert _same_best(found, expected), (terms, project_id, kinds)
                assert not got.truncated


def test_frequencies_hits_and_scores_are_the_in_memory_index_s(pg: PgStore) -> None:
    write_corpus(pg)
    _agree(pg, TERM_SETS)
    _agree(pg, TERM_SETS, limit=100, title_weight=1.0, body_weight=0.5)


def test_the_counters_follow_edits_deletes_and_a_project_change(pg: PgStore) -> None:
    write_corpus(pg)

    def edit(c: Any) -> None:
        memories.update(c, 2, {"content": "redis evicts keys; nginx caches them", "tags": "[]"})
        c.execute("DELETE FROM observations WHERE id IN (3, 4, 5)")
        other = projects.ensure(c, "/other")
        c.execute("UPDATE observations SET project_id = ? WHERE id = 7", (other,))
        c.execute("UPDATE observations SET retrieval_count = 4 WHERE id < 30")  # no term moved

    pg.write_sync(edit)
    _agree(pg, TERM_SETS)


def test_rows_stored_before_migration_6_are_analysed_by_it(pg: PgStore) -> None:
    """Rows without analysed terms (as before the step) are found by none; the step's
    analysis of the stored rows makes them searchable, counters and all."""
    write_corpus(pg)
    tables = ("observations", "memories", "prompts", "summaries")

    def forget(c: Any) -> None:
        for table in tables:
            c.execute(f"UPDATE {table} SET index_title = NULL, index_body = NULL")

    pg.write_sync(forget)
    keywords = DatabaseKeywords()
    assert pg.read_sync(lambda c: keywords.frequencies(c, ["nginx"])) == ({"nginx": 0}, 0)
    pg.write_sync(lambda c: analyse_stored(c.conn))
    _agree(pg, TERM_SETS)


def _common_corpus(store: PgStore, n: int) -> None:
    """`n` notes: 'alpha' in every one, 'beta' in a third, 'gamma' in a handful."""
    rng = random.Random(5)
    items = []
    for i in range(n):
        words = ["alpha"] * rng.randint(1, 3) + ["filler"] * rng.randint(0, 20)
        if i % 3 == 0:
            words += ["beta"] * rng.randint(1, 2)
        if i % 37 == 0:
            words.append("gamma")
        rng.shuffle(words)
        items.append({"project": "/repo", "type": "note", "title": "n", "body": " ".join(words)})
    store.write_sync(lambda c: observations.insert_many(c, items))


def test_rows_that_cannot_reach_the_best_are_not_read(pg: PgStore) -> None:
    """MaxScore: the rare term's rows are read and scored; a row holding only the common words
    cannot outscore them, so those are never read, and the hits are still exactly the best."""
    _common_corpus(pg, 400)
    want, got = _loaded(pg), DatabaseKeywords()
    args: dict[str, Any] = {
        "project_id": None,
        "kind_codes": None,
        "limit": 5,
        "title_weight": 3.0,
        "body_weight": 1.0,
    }
    terms = ["gamma", "beta", "alpha"]
    found = pg.read_sync(lambda c: got.top(terms, conn=c, **args))
    assert _same_best(found, want.top(terms, **args))
    assert got.rows_read < 400 // 3 and not got.truncated


def test_a_query_of_common_words_reads_at_most_scan_rows(pg: PgStore) -> None:
    """Past `scan_rows` the hits are the best of the newest rows read, and it says so."""
    _common_corpus(pg, 400)
    got = DatabaseKeywords(scan_rows=50)
    args: dict[str, Any] = {
        "project_id": None,
        "kind_codes": None,
        "limit": 10,
        "title_weight": 3.0,
        "body_weight": 1.0,
    }
    found = pg.read_sync(lambda c: got.top(["alpha"], conn=c, **args))
    assert got.truncated and got.rows_read == 50 and len(found) == 10
    newest = {(400 - i) * 8 + KIND_CODES["observation"] for i in range(50)}
    assert {rowid for rowid, _ in found} <= newest
