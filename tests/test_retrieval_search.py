"""worker.retrieval.search: which query terms are matched, and the whole search on SQLite and
on PostgreSQL (same corpus, same hits; two workers on one database)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from tests.search_corpus import searcher, write_corpus
from worker.retrieval import search as search_module
from worker.retrieval.db_vectors import DatabaseVectors
from worker.retrieval.ranking import Candidate
from worker.retrieval.search import (
    Mode,
    SearchRequest,
    one_stem_per_part,
    search,
    selective_terms,
    session_mates,
    threads,
)
from worker.settings import Settings, load_settings
from worker.store import Store, memories, observations, projects, sessions
from worker.store.pg import PgStore
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


def test_in_a_small_project_no_word_is_too_common_to_match() -> None:
    # Six items: a word in two of them is no word "found in most" (the cut is for speed).
    assert selective_terms(["calc", "touch"], {"calc": 2, "touch": 1}, 6, 0.2) == ["calc", "touch"]
    assert selective_terms(["the"], {"the": 900, "calc": 2}, 1000, 0.2) == ["the"]  # the rarest


# ---------------------------------------------------------------- on both backends
def _hits(store: Any, settings: Settings, searcher: Any, **request: Any) -> Any:
    keywords, service = searcher
    out = anyio.run(
        partial(search, keywords=keywords), store, settings, service, SearchRequest(**request)
    )
    return out.refused, [(c.ref, c.score) for c in out.hits], out.coverage


def _same(got: Any, want: Any) -> bool:
    """Same refusal and ranked items; scores equal but for the recency of two clock readings."""
    (refused, hits, coverage), (refused_w, hits_w, coverage_w) = got, want
    return (refused, [r for r, _ in hits], coverage) == (
        refused_w,
        [r for r, _ in hits_w],
        coverage_w,
    ) and [s for _, s in hits] == pytest.approx([s for _, s in hits_w], rel=1e-6)


QUERIES = [
    "redis cache eviction",
    "getUserById token",
    "nginx",
    "flaky OrderService session cookie",
    "funzione configurazione",
    "webhook backoff retries",
    "kubernetes helm chart",  # nothing about it: refused
]


def test_each_candidate_is_credited_with_its_closest_session_mate() -> None:
    """What a session worked on and what it concluded are separate items: each candidate's
    thread evidence is the best other candidate of its session (cosine or clause, coverage)."""
    cands = [
        Candidate(("observation", 1), plain_cosine=0.2, coverage=0.1),
        Candidate(("memory", 2), plain_cosine=0.5, coverage=0.6),
        Candidate(("observation", 3), plain_cosine=0.9, coverage=0.9),
        Candidate(("prompt", 4), plain_cosine=0.8, coverage=0.8),
    ]
    minute = 60_000
    items: dict[Any, dict[str, Any]] = {
        ("observation", 1): {"session_id": "s1", "created_at": 10 * minute},
        ("memory", 2): {"session_id": "s1", "created_at": 12 * minute},
        ("observation", 3): {"session_id": "s2", "created_at": 11 * minute},
        ("prompt", 4): {"session_id": None, "created_at": 11 * minute},
        ("observation", 5): {"session_id": "s1", "created_at": 80 * minute},
    }
    cands.append(Candidate(("observation", 5), plain_cosine=0.95, coverage=1.0))
    clause = {("memory", 2): 0.7, ("observation", 1): 0.3}
    found = threads(cands, items, clause, 30 * minute)
    assert found[("observation", 1)] == (0.7, 0.6)  # the memory's best clause
    assert found[("memory", 2)] == (0.3, 0.1)
    assert found[("observation", 3)] == (0.0, 0.0)  # alone in its session
    assert found[("prompt", 4)] == (0.0, 0.0)  # no session
    # An hour later the session had moved on: not the same stretch of work.
    assert found[("observation", 5)] == (0.0, 0.0)
    assert threads(cands, items, clause, 90 * minute)[("memory", 2)] == (0.95, 1.0)


def test_the_rest_of_a_judged_items_session_counts_as_its_thread_evidence() -> None:
    """Months of routine history push the rest of a session's work out of the judged window and
    out of every candidate list: the items of a judged hit's session written near it are read
    from the store (rows), count as evidence for it, and are not judged themselves."""
    minute = 60_000
    top = [
        Candidate(("memory", 1), plain_cosine=0.3, coverage=0.0),
        Candidate(("observation", 2), plain_cosine=0.2, coverage=0.1),  # no session
    ]
    items: dict[Any, dict[str, Any]] = {
        ("memory", 1): {"session_id": "s1", "created_at": 10 * minute},
        ("observation", 2): {"session_id": None, "created_at": 10 * minute},
    }
    rows = [
        (("memory", 1), "s1", 10 * minute),  # judged already
        (("observation", 3), "s2", 10 * minute),  # another session
        (("observation", 4), "s1", 11 * minute),
        (("prompt", 5), "s1", 9 * minute),
        (("observation", 6), "s1", 80 * minute),  # the session had moved on
    ]
    mates = session_mates(top, items, rows, 30 * minute, 10)
    assert list(mates) == [("observation", 4), ("prompt", 5)]
    assert mates[("observation", 4)] == {"session_id": "s1", "created_at": 11 * minute}
    assert list(session_mates(top, items, rows, 30 * minute, 1)) == [("observation", 4)]
    assert threads(top, items, {}, 30 * minute)[("memory", 1)] == (0.0, 0.0)
    found = threads(
        top,
        {**items, **mates},
        {},
        30 * minute,
        [
            Candidate(("observation", 4), plain_cosine=0.6, coverage=0.2),
            Candidate(("prompt", 5), plain_cosine=0.1, coverage=0.5),
        ],
    )
    assert found[("memory", 1)] == (0.6, 0.5)
    assert set(found) == {("memory", 1), ("observation", 2)}  # mates get no figures


def test_one_long_session_does_not_crowd_out_the_others_mates() -> None:
    """The mates are taken from each session in turn, the closest in time to one of its judged
    items first: a session of hundreds of routine items leaves room for the few items of the
    session that saved the judged memory."""
    minute = 60_000
    top = [Candidate(("observation", 1)), Candidate(("memory", 2))]
    items: dict[Any, dict[str, Any]] = {
        ("observation", 1): {"session_id": "routine", "created_at": 0},
        ("memory", 2): {"session_id": "work", "created_at": 500 * minute},
    }
    rows = [(("observation", 10 + i), "routine", i * 1000) for i in range(300)]
    rows += [(("observation", 400), "work", 490 * minute), (("prompt", 7), "work", 499 * minute)]
    mates = session_mates(top, items, rows, 30 * minute, 4)
    assert list(mates) == [
        ("observation", 10),  # the routine session's closest
        ("prompt", 7),  # the work session's closest
        ("observation", 11),
        ("observation", 400),
    ]


@pytest.mark.postgres
def test_the_same_corpus_gives_the_same_hits_on_sqlite_and_postgresql(
    store: Store, pg_url: str, tmp_path: Path
) -> None:
    """Hybrid, keyword and semantic search, the refusal and the prompt context's per-item
    judgment: the same ranked items and scores on both backends."""
    settings = load_settings(home=tmp_path, embed_enabled=True)
    pg = PgStore(pg_url)
    pg.open()
    searchers = []
    try:
        for backend in (store, pg):
            write_corpus(backend)
            searchers.append(searcher(backend, settings))
        answered = 0
        for query in QUERIES:
            for mode in ("hybrid", "keyword", "semantic"):
                for judge in (False, True):
                    request = {"query": query, "project": "/repo", "mode": mode, "limit": 8}
                    request["judge_items"] = judge
                    want = _hits(store, settings, searchers[0], **request)
                    got = _hits(pg, settings, searchers[1], **request)
                    assert _same(got, want), (query, mode, judge, got, want)
                    answered += not want[0]
        assert answered > 20  # most queries find something (and the last one none)
        assert _hits(pg, settings, searchers[1], query=QUERIES[-1], project="/repo")[0]
        # Counted retrievals land on both.
        request = {"query": "nginx", "project": "/repo", "count_retrieval": True}
        _, hits, _ = _hits(pg, settings, searchers[1], **request)
        kind, item_id = hits[0][0]
        table = {"memory": "memories", "observation": "observations"}[kind]
        sql = f"SELECT retrieval_count FROM {table} WHERE id = ?"
        assert pg.read_sync(lambda c: c.execute(sql, (item_id,)).fetchone()[0]) == 1
    finally:
        for _keywords, service in searchers:
            anyio.run(service.stop)
        pg.close()


@pytest.mark.postgres
def test_a_worker_finds_at_once_what_another_worker_wrote_and_embedded(
    pg_url: str, tmp_path: Path
) -> None:
    """Two PgStores on one database (two workers): an item the first writes and embeds is found
    by the second's next search, by its words and by its vector (the second never embedded
    it: it followed the change logs), and forgotten by it once deleted."""
    settings = load_settings(home=tmp_path, embed_enabled=True)
    first, second = PgStore(pg_url), PgStore(pg_url)
    first.open()
    second.open()
    searchers = []
    try:
        write_corpus(first)
        searchers = [searcher(first, settings), searcher(second, settings)]
        row, _ = first.write_sync(
            lambda c: observations.insert(
                c, {"project": "/repo", "type": "note", "title": "quokka zanzibar", "body": ""}
            )
        )
        ref = ("observation", int(row["id"]))
        searchers[0][1].enqueue("observation", [ref[1]])
        assert searchers[0][1].wait_idle(30)
        embedded = searchers[1][1].status()["embedded_since_start"]

        for mode in ("keyword", "semantic"):
            request = {"query": "quokka zanzibar", "project": "/repo", "mode": mode}
            refused, hits, _ = _hits(second, settings, searchers[1], **request)
            assert not refused and hits[0][0] == ref, mode
        assert searchers[1][1].status()["embedded_since_start"] == embedded
        assert searchers[1][1].vector(ref) is not None

        first.write_sync(lambda c: c.execute("DELETE FROM observations WHERE id = ?", (ref[1],)))
        request = {"query": "quokka zanzibar", "project": "/repo", "mode": "hybrid"}
        _refused, hits, _ = _hits(second, settings, searchers[1], **request)
        assert ref not in [r for r, _ in hits]
        assert searchers[1][1].vector(ref) is None
        found = second.read_sync(lambda c: searchers[1][0].frequencies(c, ["quokka"]))
        assert found[0] == {"quokka": 0}
    finally:
        for _keywords, service in searchers:
            anyio.run(service.stop)
        first.close()
        second.close()


def test_the_vector_half_is_the_same_whether_the_worker_or_the_database_searches(
    vector_store: Store | PgStore, tmp_path: Path
) -> None:
    """On PostgreSQL with pgvector the vector half of a search is a query on the HNSW index of
    the items' context vectors (no vector held by the worker); on SQLite and on PostgreSQL
    without pgvector, the worker's matrix. Same corpus: the same hits as SQLite's, in every
    mode, and the same ranked vector candidates."""
    settings = load_settings(home=tmp_path, embed_enabled=True)
    reference = Store(tmp_path / "reference.db")
    reference.open()
    searchers = []
    try:
        for backend in (reference, vector_store):
            write_corpus(backend)
            searchers.append(searcher(backend, settings))
        service = searchers[1][1]
        native = bool(getattr(vector_store, "native_vectors", False))
        assert isinstance(service.index, DatabaseVectors) is native
        assert service.status()["indexed_vectors"] == len(searchers[0][1].index or [])
        for query in QUERIES:
            vector = service.embed_query(query)
            assert vector is not None
            for kinds in (None, ["memory"], ["observation", "summary"]):
                want = searchers[0][1].index.search(  # type: ignore[union-attr]
                    vector, project_id=1, kinds=kinds, limit=20
                )
                got = service.index.search(vector, project_id=1, kinds=kinds, limit=20)  # type: ignore[union-attr]
                # Items sharing no word with the query tie at a cosine of 0 (the fake
                # embedder), give or take rounding: compared are those that do share one.
                want = [(r, s) for r, s in want if s > 1e-4]
                got = got[: len(want)]
                assert [r for r, _ in got] == [r for r, _ in want], (query, kinds)
                assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
                # The hits' context vectors as de-duplication reads them: the matrix's rows
                # (pgvector's binary form decoded on the team database).
                refs = [r for r, _ in got]
                stored, held = service.vectors(refs), searchers[0][1].vectors(refs)
                assert sorted(stored) == sorted(held) == sorted(refs)
                for ref in refs:
                    assert stored[ref].dtype == np.float32
                    assert stored[ref] == pytest.approx(held[ref], abs=1e-6)
            for mode in ("hybrid", "semantic"):
                request = {"query": query, "project": "/repo", "mode": mode, "limit": 8}
                want_hits = _hits(reference, settings, searchers[0], **request)
                got_hits = _hits(vector_store, settings, searchers[1], **request)
                assert _same(got_hits, want_hits), (query, mode, got_hits, want_hits)
        # A memory archived, superseded or deleted leaves the hits, as on SQLite.
        request = {"query": "pin nginx", "project": "/repo", "mode": "semantic", "limit": 8}
        first = _hits(vector_store, settings, searchers[1], **request)[1][0][0]
        assert first == ("memory", 3)
        vector_store.write_sync(
            lambda c: c.execute("UPDATE memories SET archived_at = 1 WHERE id = 3")
        )
        hits = _hits(vector_store, settings, searchers[1], **request)[1]
        assert ("memory", 3) not in [r for r, _ in hits]
    finally:
        for _keywords, service in searchers:
            anyio.run(service.stop)
        reference.close()


def _judged(
    store: Any, settings: Settings, searcher: Any, query: str, mode: Mode = "hybrid"
) -> Any:
    keywords, service = searcher
    request = SearchRequest(
        query=query,
        project="/repo",
        mode=mode,
        limit=8,
        judge_items=True,
        exclude_session_prompts="asking",
    )
    out = anyio.run(partial(search, keywords=keywords), store, settings, service, request)
    return [c.ref for c in out.hits], {
        c.ref: {"coverage": c.coverage or 0.0, **(c.features or {})} for c in out.judged
    }


def _stored_prompt(store: Any, searcher: Any, session: str, text: str) -> int:
    """`text` stored as a prompt of `session` in /repo, and embedded; its id."""

    def ask(c: Any) -> int:
        pid = projects.ensure(c, "/repo")
        sessions.ensure(c, session, pid)
        return int(sessions.add_prompt(c, session, pid, text, None)["id"])

    prompt_id: int = store.write_sync(ask)
    searcher[1].enqueue("prompt", [prompt_id])
    assert searcher[1].wait_idle(30)
    return prompt_id


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
@pytest.mark.parametrize("query", ["why is the nginx certificate refresh failing", QUERIES[3]])
def test_a_prompt_gets_the_same_judgment_before_and_after_it_is_stored(
    store: Store, tmp_path: Path, query: str, mode: Mode
) -> None:
    """The hook stores the prompt, then asks for its context: the stored prompt (keyword-matched
    and, once embedded, vector-matched with itself) takes no rank, and its words count once in
    each frequency whether it is stored or not, so every candidate's evidence is what it was
    before (what the preview shows and the relevance model was fitted on)."""
    settings = load_settings(home=tmp_path, embed_enabled=True)
    write_corpus(store)
    found = searcher(store, settings)
    try:
        before = _judged(store, settings, found, query, mode)

        prompt_id = _stored_prompt(store, found, "asking", query)
        assert found[1].vector(("prompt", prompt_id)) is not None  # its own closest vector
        after = _judged(store, settings, found, query, mode)
        assert before[0], "the query finds something"
        assert after[0] == before[0]
        # Equal but for the recency in the ranking score (two clock readings).
        assert after[1].keys() == before[1].keys()
        for ref, features in before[1].items():
            assert after[1][ref] == pytest.approx(features, abs=1e-3), ref
    finally:
        anyio.run(found[1].stop)


def test_an_earlier_question_whose_session_did_nothing_is_never_given(
    store: Store, tmp_path: Path
) -> None:
    """Asked again (here in the same words, its closest possible match), an earlier question
    answered without any work is no hit: its line would hold only the question. Once its session
    has done something, the same prompt is judged by the model like any item."""
    settings = load_settings(home=tmp_path, embed_enabled=True)
    write_corpus(store)
    question = "how does the redis cache eviction policy allkeys-lru pick keys?"

    def ask(c: Any) -> int:
        pid = projects.ensure(c, "/repo")
        sessions.ensure(c, "earlier", pid)
        return int(sessions.add_prompt(c, "earlier", pid, question, None)["id"])

    prompt_id = store.write_sync(ask)
    found = searcher(store, settings)
    try:
        hits, judged = _judged(store, settings, found, question)
        assert ("prompt", prompt_id) in judged  # a candidate, close as can be
        assert judged[("prompt", prompt_id)]["idle_prompt"] == 1.0
        assert ("prompt", prompt_id) not in hits
        store.write_sync(
            lambda c: observations.insert(
                c,
                {
                    "project": "/repo",
                    "session_id": "earlier",
                    "type": "command",
                    "title": "Run: redis-cli config get maxmemory-policy",
                    "body": "stdout: allkeys-lru",
                },
            )
        )
        hits, judged = _judged(store, settings, found, question)
        assert judged[("prompt", prompt_id)]["idle_prompt"] == 0.0
        assert ("prompt", prompt_id) in hits
    finally:
        anyio.run(found[1].stop)


@pytest.mark.parametrize("query", ["why is the nginx certificate refresh failing", QUERIES[3]])
def test_a_question_asked_again_is_judged_as_if_its_first_asking_were_not_there(
    store: Store, tmp_path: Path, query: str
) -> None:
    """Its first asking, in another session that did no work, is never given, so it sets no bar
    either: it is the closest candidate there is, and as the prompt's best hit it made every hit
    that answers the question look far behind (bench/learning.py: 18 of 38 answerable questions
    asked again in other words got nothing)."""
    settings = load_settings(home=tmp_path, embed_enabled=True)
    write_corpus(store)
    found = searcher(store, settings)
    try:
        before = _judged(store, settings, found, query)

        prompt_id = _stored_prompt(store, found, "yesterday", query)
        hits, judged = _judged(store, settings, found, query)
        earlier = ("prompt", prompt_id)
        assert judged[earlier]["idle_prompt"] == 1.0 and earlier not in hits
        assert judged[earlier]["clause"] >= max(f["clause"] for f in judged.values())
        others = [f for ref, f in judged.items() if ref != earlier]
        # The bar is the best of the others, as if the first asking were not stored.
        for features in judged.values():
            assert features["best_cosine"] == pytest.approx(max(f["clause"] for f in others))
            assert features["best_coverage"] == pytest.approx(max(f["coverage"] for f in others))
        assert before[0] and hits, "the question finds something either way"
    finally:
        anyio.run(found[1].stop)


@pytest.mark.parametrize("reserve", [8, 0])
def test_the_memories_closest_to_the_prompt_are_judged_wherever_they_rank(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reserve: int
) -> None:
    """Months of routine items on a topic outrank, in words and in vectors, the one memory kept
    about it, asked for in other words; the memories closest to the prompt are judged all the
    same (with no reserve, here none is: it is past every list's candidates)."""
    monkeypatch.setattr(search_module, "MEMORY_RESERVE", reserve)
    settings = load_settings(home=tmp_path, embed_enabled=True)

    def write(c: Any) -> int:
        pid = projects.ensure(c, "/repo")
        sessions.ensure(c, "routine", pid)
        for i in range(220):
            observations.insert(
                c,
                {
                    "project": "/repo",
                    "session_id": "routine",
                    "type": "command",
                    "title": f"Run: redis cache eviction check {i}",
                    "body": f"stdout: redis cache eviction keys policy report {i}",
                    "created_at_ms": 1_700_000_000_000 + i * 60_000,
                },
            )
        kept, _ = memories.insert(
            c,
            {
                "kind": "decision",
                "content": "Sessions live in redis with maxmemory 2gb and allkeys-lru",
                "scope": "project",
                "project": "/repo",
            },
        )
        return int(kept["id"])

    memory_id = store.write_sync(write)
    found = searcher(store, settings)
    try:
        _, judged = _judged(store, settings, found, "which redis cache eviction keys policy?")
        assert len(judged) >= 64
        assert (("memory", memory_id) in judged) is (reserve > 0)
    finally:
        anyio.run(found[1].stop)
