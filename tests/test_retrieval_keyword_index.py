"""The in-memory BM25 index: same scores as FTS5's bm25(), and it follows every later write."""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Any

import pytest
from starlette.testclient import TestClient

from worker.retrieval.keyword_index import KeywordIndex
from worker.settings import Settings
from worker.store import Store, index_rows, memories, observations
from worker.terms import query_terms, quote

WORDS = [
    "deploy",
    "nginx",
    "reload",
    "cache",
    "invalidation",
    "retry",
    "backoff",
    "parser",
    "token",
    "refresh",
    "session",
    "cookie",
    "migration",
    "schema",
    "index",
    "query",
    "plan",
    "timeout",
    "race",
    "deadlock",
    "pool",
    "connection",
    "webhook",
    "billing",
    "invoice",
    "refund",
    "getUserById",
    "parse_config",
    "OrderService",
    "funzione",
    "funzioni",
    "caffè",
]
FTS = (
    "SELECT rowid, bm25(search_index, ?, ?, 0, 0, 0, 0) AS r FROM search_index "
    "WHERE search_index MATCH ? ORDER BY r, rowid LIMIT ?"
)


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _fill(store: Store, rng: random.Random, n: int, project: str = "/repo") -> None:
    items = [
        {
            "project": project,
            "session_id": f"s{i % 7}",
            "type": rng.choice(("note", "command", "file_write")),
            "title": _text(rng, rng.randint(1, 6)),
            "body": _text(rng, rng.randint(0, 30)),
            "files": [f"src/{rng.choice(WORDS)}.py"],
        }
        for i in range(n)
    ]
    store.write_sync(lambda c: observations.insert_many(c, items))


def _memory(store: Store, content: str, project: str | None = "/repo") -> int:
    item: dict[str, Any] = {"kind": "fact", "content": content, "scope": "project"}
    if project is None:
        item["scope"] = "global"
    else:
        item["project"] = project
    row, _ = store.write_sync(lambda c: memories.insert(c, item))
    return int(row["id"])


def _fts(conn: sqlite3.Connection, terms: list[str], weights: tuple[float, float] = (3, 1)):
    expression = "{title body} : (" + " OR ".join(quote(t) for t in terms) + ")"
    rows = conn.execute(FTS, (*weights, expression, 100)).fetchall()
    return [(int(r[0]), -float(r[1])) for r in rows]


def _top(store: Store, index: KeywordIndex, terms: list[str], **kw: Any) -> list[tuple[int, float]]:
    args: dict[str, Any] = {
        "project_id": None,
        "kind_codes": None,
        "limit": 100,
        "title_weight": 3.0,
        "body_weight": 1.0,
    }
    args.update(kw)
    store.read_sync(index.refresh)
    return index.top(terms, **args)


@pytest.fixture
def keywords() -> KeywordIndex:
    return KeywordIndex()


def _load_corpus(store: Any, keywords: KeywordIndex) -> Any:
    rng = random.Random(3)
    _fill(store, rng, 400)
    for i in range(30):
        _memory(store, _text(rng, 12) + f" memo{i}", None if i % 5 == 0 else "/repo")
    store.read_sync(keywords.load)
    assert keywords.ready
    return store


@pytest.fixture
def loaded(store: Store, keywords: KeywordIndex) -> Store:
    """A loaded index over a SQLite store, whose FTS5 table scores as the reference."""
    return _load_corpus(store, keywords)


@pytest.fixture
def loaded_backend(backend_store: Any, keywords: KeywordIndex) -> Any:
    """A loaded index over a store of each backend (store/index_rows.py reads both)."""
    return _load_corpus(backend_store, keywords)


def _reference(store: Any, terms: list[str]) -> list[tuple[int, float]]:
    """What the followed index must answer: FTS5's bm25() on SQLite; on PostgreSQL (no FTS5
    there; the parity test below ties it to SQLite) a copy loaded afresh from the database."""
    if isinstance(store, Store):
        return store.read_sync(lambda c: _fts(c, terms))
    fresh = KeywordIndex()
    store.read_sync(fresh.load)
    return _top(store, fresh, terms)


@pytest.mark.parametrize("weights", [(3.0, 1.0), (1.0, 1.0), (5.0, 0.5)])
def test_scores_and_order_equal_fts5_bm25(
    loaded: Store, weights: tuple[float, float], keywords: KeywordIndex
) -> None:
    rng = random.Random(9)
    for _ in range(60):
        terms = query_terms(_text(rng, rng.randint(1, 4)), 48)
        want = loaded.read_sync(lambda c, t=terms: _fts(c, t, weights))
        got = _top(loaded, keywords, terms, title_weight=weights[0], body_weight=weights[1])
        _same_ranking(got, want)


def _same_ranking(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    """Equal scores (to rounding) and order; rows tied to the last bits may swap, and ties at
    the cut-off may differ."""
    assert len(got) == len(want)
    if not want:
        return
    cut = want[-1][1] + 1e-9 if len(want) == 100 else float("-inf")

    def canonical(rows: list[tuple[int, float]]) -> list[tuple[float, int]]:
        return sorted((-round(s, 9), r) for r, s in rows if s > cut)

    assert canonical(got) == canonical(want)
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)


def test_frequencies_equal_the_fts5_vocabulary(loaded: Store, keywords: KeywordIndex) -> None:
    terms = sorted({t for w in WORDS for t in query_terms(w, 48)})
    got, rows = loaded.read_sync(lambda c: keywords.frequencies(c, terms))
    for term in terms:
        row = loaded.read_sync(
            lambda c, t=term: c.execute(
                "SELECT doc FROM search_vocab WHERE term = ?", (t,)
            ).fetchone()
        )
        assert got[term] == (row[0] if row else 0), term
    assert rows == loaded.read_sync(
        lambda c: c.execute("SELECT COUNT(*) FROM search_index").fetchone()[0]
    )


def test_follows_inserts_updates_and_deletes_after_loading(
    loaded_backend: Any, keywords: KeywordIndex
) -> None:
    loaded = loaded_backend
    # A batch insert (observations write their index rows themselves) ...
    _fill(loaded, random.Random(5), 50)
    oid = loaded.write_sync(
        lambda c: observations.insert_many(
            c, [{"project": "/repo", "type": "note", "title": "zanzibar quokka", "body": ""}]
        )
    )[0][0]["id"]
    # ... a memory through the triggers, then edited, then another one deleted.
    mid = _memory(loaded, "the wombat lives in the staging cluster")
    gone = _memory(loaded, "the axolotl config is obsolete")
    loaded.write_sync(lambda c: memories.update(c, mid, {"content": "the platypus moved"}))
    loaded.write_sync(lambda c: c.execute("DELETE FROM memories WHERE id = ?", (gone,)))
    loaded.write_sync(lambda c: c.execute("DELETE FROM observations WHERE id = 1"))

    assert [r for r, _ in _top(loaded, keywords, ["quokka"])] == [oid * 8 + 1]
    assert _top(loaded, keywords, ["wombat"]) == [] and _top(loaded, keywords, ["axolotl"]) == []
    assert [r for r, _ in _top(loaded, keywords, ["platypus"])] == [mid * 8 + 2]
    # Everything still scores as FTS5 does (row count and lengths followed the changes).
    for terms in (["deploy"], ["retri", "cach"], ["platypus", "nginx"]):
        _same_ranking(_top(loaded, keywords, terms), _reference(loaded, terms))


def test_project_filter_keeps_global_items_and_kind_filter(
    loaded_backend: Any, keywords: KeywordIndex
) -> None:
    loaded = loaded_backend
    _fill(loaded, random.Random(8), 40, project="/other")
    rows = loaded.read_sync(
        lambda c: {r[0]: r[3] for chunk in index_rows.all_rows(c, 100) for r in chunk}
    )
    assert len(rows) == 470
    repo = loaded.read_sync(
        lambda c: c.execute("SELECT id FROM projects WHERE key = '/repo'").fetchone()[0]
    )
    hits = _top(loaded, keywords, ["deploy", "nginx", "memo0"], project_id=repo)
    assert hits and all(rows[r] in (repo, None) for r, _ in hits)
    assert any(rows[r] is None for r, _ in hits)  # memo0 is a global memory
    only_memories = _top(loaded, keywords, ["deploy", "nginx"], kind_codes=[2])
    assert only_memories and all(r % 8 == 2 for r, _ in only_memories)
    assert len(_top(loaded, keywords, ["deploy"], limit=3)) == 3


def test_the_worker_loads_it_reports_it_and_finds_a_write_at_once(client: TestClient) -> None:
    deadline = time.monotonic() + 30
    while True:
        state = client.get("/api/status").json()["services"]["keyword_index"]
        if state["status"] == "ready" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert state == {"status": "ready", "rows": 0, "error": None}
    posted = client.post(
        "/api/observations",
        json={"project": "/repo", "type": "note", "title": "quokka cache warmed", "body": ""},
    ).json()
    hits = client.get(
        "/api/search", params={"q": "quokka", "project": "/repo", "mode": "keyword"}
    ).json()["hits"]
    assert [h["id"] for h in hits] == [posted["id"]]
    assert client.get("/api/status").json()["services"]["keyword_index"]["rows"] == 1


def test_many_removed_rows_ask_for_a_fresh_copy_which_drops_them(
    loaded_backend: Any, monkeypatch: pytest.MonkeyPatch, keywords: KeywordIndex
) -> None:
    import worker.retrieval.keyword_index as module

    loaded = loaded_backend
    monkeypatch.setattr(module, "REBUILD_DEAD_ROWS", 10)
    index = keywords
    loaded.write_sync(lambda c: c.execute("DELETE FROM observations WHERE id <= 5"))
    loaded.read_sync(index.refresh)
    assert not index.wants_rebuild
    loaded.write_sync(lambda c: c.execute("DELETE FROM observations WHERE id <= 150"))
    _top(loaded, keywords, ["deploy"])
    assert index.wants_rebuild
    loaded.read_sync(index.load)
    assert not index.wants_rebuild
    assert index._used == index._live == 280 and index.status()["status"] == "ready"
    for terms in (["deploy"], ["retri", "cach"]):
        _same_ranking(_top(loaded, keywords, terms), _reference(loaded, terms))


def test_the_service_loads_then_applies_writes_and_rebuilds_in_the_background(
    backend_store: Any, monkeypatch: pytest.MonkeyPatch, keywords: KeywordIndex
) -> None:
    import asyncio

    import worker.retrieval.keyword_index as module
    from worker.retrieval.keyword_service import KeywordIndexService

    monkeypatch.setattr(module, "REBUILD_DEAD_ROWS", 10)
    store = backend_store
    _fill(store, random.Random(2), 100)
    service = KeywordIndexService(store, keywords, interval=0.02)
    service.start()
    index = keywords

    def wait_for(check: Any) -> None:
        deadline = time.monotonic() + 20
        while not check():
            assert time.monotonic() < deadline, index.status()
            time.sleep(0.01)

    try:
        wait_for(lambda: service.status()["status"] == "ready")
        assert service.status()["rows"] == 100
        _fill(store, random.Random(4), 20)
        wait_for(lambda: index.status()["rows"] == 120)  # applied with no query asking
        store.write_sync(lambda c: c.execute("DELETE FROM observations WHERE id <= 60"))
        wait_for(lambda: index._used == index._live == 60)  # a fresh copy, built alone
    finally:
        asyncio.run(service.stop())
    assert service._thread is not None and not service._thread.is_alive()


def test_an_upsert_that_rewrites_a_summary_is_followed(
    loaded_backend: Any, keywords: KeywordIndex
) -> None:
    """Summaries are written with INSERT ... ON CONFLICT DO UPDATE, whose conflict policy
    SQLite applies to the statements of the triggers it fires (an INSERT OR REPLACE in the
    change-log trigger then failed on its second entry for the row)."""
    from worker.store import projects, sessions, summaries

    loaded = loaded_backend

    def write(request: str) -> None:
        def go(c: Any) -> None:
            pid = projects.ensure(c, "/repo")
            sessions.ensure(c, "s-up", pid)
            summaries.upsert(
                c, "s-up", pid, request=request, completed=[], files=[], learned=[], next_steps=[]
            )

        loaded.write_sync(go)

    write("migrate the quokka cache")
    write("migrate the wallaby cache")
    assert _top(loaded, keywords, ["quokka"]) == []
    assert [r % 8 for r, _ in _top(loaded, keywords, ["wallabi"])] == [4]
    _same_ranking(_top(loaded, keywords, ["cach"]), _reference(loaded, ["cach"]))


def test_rows_without_a_single_word_are_followed(
    loaded_backend: Any, keywords: KeywordIndex
) -> None:
    """Stop words and symbols only: the row is indexed with no terms (the fuzzer's 'D\U0001523a'
    once made applying such a batch raise)."""
    loaded = loaded_backend
    before = loaded.read_sync(lambda c: keywords.frequencies(c, ["deploy"]))[1]
    loaded.write_sync(
        lambda c: observations.insert_many(
            c, [{"project": "/repo", "type": "note", "title": "the \U0001523a", "body": "a"}]
        )
    )
    assert loaded.read_sync(lambda c: keywords.frequencies(c, ["deploy"]))[1] == before + 1
    _same_ranking(_top(loaded, keywords, ["deploy"]), _reference(loaded, ["deploy"]))


def test_a_search_before_the_first_load_loads_it_and_finds_the_items(
    backend_store: Any, settings: Settings
) -> None:
    """The index is the one keyword scorer: a search that comes before the worker's background
    load builds it there and then (no empty answer while it loads)."""
    import asyncio

    from worker.retrieval.search import SearchRequest, search

    store = backend_store
    _fill(store, random.Random(5), 50)
    oid = store.write_sync(
        lambda c: observations.insert_many(
            c, [{"project": "/repo", "type": "note", "title": "quokka cache warmed", "body": ""}]
        )
    )[0][0]["id"]
    index = KeywordIndex()
    req = SearchRequest(query="quokka", project="/repo", mode="keyword", limit=5)
    out = asyncio.run(search(store, settings, None, req, keywords=index))
    assert index.ready and index.status()["rows"] == 51
    assert [h.ref for h in out.hits] == [("observation", oid)]


def _same_writes(store: Any) -> None:
    """One corpus written through the store modules (both backends): observations, memories
    (global and project ones, with tags), a prompt and summaries, then edits and deletes."""
    from worker.store import projects, sessions, summaries

    rng = random.Random(11)
    _fill(store, rng, 300)
    _fill(store, rng, 40, project="/other")
    for i in range(30):
        item: dict[str, Any] = {
            "kind": "fact",
            "content": _text(rng, 12) + f" memo{i}",
            "scope": "global" if i % 5 == 0 else "project",
            "tags": [rng.choice(WORDS), "tagword"],
        }
        if i % 5:
            item["project"] = "/repo"
        store.write_sync(lambda c, it=item: memories.insert(c, it))

    def session_rows(c: Any) -> None:
        pid = projects.ensure(c, "/repo")
        for n in range(3):
            sessions.ensure(c, f"sess{n}", pid)
            sessions.add_prompt(c, f"sess{n}", pid, _text(rng, 8), None)
            summaries.upsert(
                c,
                f"sess{n}",
                pid,
                request=_text(rng, 5),
                completed=[_text(rng, 6)],
                learned=[_text(rng, 4)],
                next_steps=[_text(rng, 3)],
                files=["src/parser.py"],
            )

    store.write_sync(session_rows)
    store.write_sync(lambda c: memories.update(c, 3, {"content": "the platypus moved nginx"}))
    store.write_sync(lambda c: c.execute("DELETE FROM memories WHERE id = 4"))
    store.write_sync(lambda c: c.execute("DELETE FROM observations WHERE id <= 3"))


@pytest.mark.postgres
def test_postgresql_gives_the_same_terms_scores_and_order_as_sqlite(
    store: Store, pg_url: str
) -> None:
    """The same writes on both backends: the in-memory index loaded from each (PostgreSQL's
    rows analysed by the reader, SQLite's by its triggers) scores every query the same, also
    for rows changed after loading."""
    from worker.store.pg import PgStore

    pg = PgStore(pg_url)
    pg.open()
    try:
        lite_index, pg_index = KeywordIndex(), KeywordIndex()
        for backend, index in ((store, lite_index), (pg, pg_index)):
            _fill(backend, random.Random(1), 20)
            backend.read_sync(index.load)
            _same_writes(backend)  # followed through the change log
        rng = random.Random(9)
        queries = [query_terms(_text(rng, rng.randint(1, 4)), 48) for _ in range(60)]
        queries += [["platypus"], ["tagword"], ["memo3"], ["getuserbyid"], ["parser"]]
        for terms in queries:
            for project_id in (None, 1):
                # No cut-off: rows tied at it could be either backend's.
                want = _top(store, lite_index, terms, project_id=project_id, limit=10_000)
                got = _top(pg, pg_index, terms, project_id=project_id, limit=10_000)
                assert got == want, terms
        assert _top(pg, pg_index, ["platypus"]) and not _top(pg, pg_index, ["memo3"])
        vocab = sorted({t for w in [*WORDS, "tagword", "platypus"] for t in query_terms(w, 48)})
        assert store.read_sync(lambda c: lite_index.frequencies(c, vocab)) == pg.read_sync(
            lambda c: pg_index.frequencies(c, vocab)
        )
        # A copy loaded afresh from each agrees too.
        for backend, index in ((store, lite_index), (pg, pg_index)):
            backend.read_sync(index.load)
        for terms in queries[:20]:
            want = _top(store, lite_index, terms, limit=10_000)
            assert _top(pg, pg_index, terms, limit=10_000) == want
    finally:
        pg.close()
