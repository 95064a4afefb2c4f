"""worker/retrieval/context_builder.py: the prompt context on SQLite and on PostgreSQL (the
session-start context reads the project profile, ported with the profiles module)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.search_corpus import searcher, write_corpus
from worker.retrieval.context_builder import (
    PROMPT_ITEM_TOKENS,
    PROMPT_MEMORY_TOKENS,
    ContextRequest,
    build_context,
    prompt_item_text,
)
from worker.retrieval.tokens import estimate_tokens
from worker.settings import Settings, load_settings
from worker.store import Store
from worker.store.pg import PgStore

PROMPTS = [
    "why is the redis cache evicting keys",
    "the OrderService test is flaky again, session cookie race?",
    "what did we decide about nginx",
    "how do I configure kubernetes helm charts",
]


def _context(store: Any, settings: Settings, found: Any, **request: Any) -> dict[str, Any]:
    keywords, service = found
    return anyio.run(
        partial(build_context, keywords=keywords),
        store,
        settings,
        service,
        ContextRequest(project="/repo", **request),
    )


@pytest.mark.postgres
def test_the_prompt_context_is_the_same_on_both_backends_and_skips_what_was_given(
    store: Store, pg_url: str, tmp_path: Path
) -> None:
    settings = load_settings(home=tmp_path, embed_enabled=True)
    pg = PgStore(pg_url)
    pg.open()
    found = []
    try:
        for backend in (store, pg):
            write_corpus(backend)
            found.append(searcher(backend, settings))
        given = 0
        for prompt in PROMPTS:
            answers = [
                _context(backend, settings, f, query=prompt, session_id="s1")
                for backend, f in ((store, found[0]), (pg, found[1]))
            ]
            assert answers[0] == answers[1], prompt
            given += len(answers[0]["items"])
        assert given >= 3 and answers[0]["refused"]  # kubernetes: nothing relevant
        # The same prompt again in that session: what it was given is not given twice.
        for backend, f in ((store, found[0]), (pg, found[1])):
            again = _context(backend, settings, f, query=PROMPTS[0], session_id="s1")
            first = _context(backend, settings, f, query=PROMPTS[0], session_id="s9")
            assert first["items"]
            assert not {(i["kind"], i["id"]) for i in first["items"]} & {
                (i["kind"], i["id"]) for i in again["items"]
            }
    finally:
        for _keywords, service in found:
            anyio.run(service.stop)
        pg.close()


def test_a_memory_is_given_whole_where_an_observation_is_cut() -> None:
    """A memory's reason comes last ("..., because ..."): its line holds up to
    PROMPT_MEMORY_TOKENS, an observation's (a tool's output, noisier) PROMPT_ITEM_TOKENS."""
    reason = "Deliberately not PESSIMISTIC_WRITE: row locks made the nightly ERP import time out."
    text = (
        "Stock reservations use optimistic locking (@Version on StockLevel, migration V8) and "
        "StockReservationService retries up to 3 attempts, each in its own transaction. " + reason
    )
    assert PROMPT_ITEM_TOKENS < estimate_tokens(text) <= PROMPT_MEMORY_TOKENS
    now = 1_700_000_000_000
    memory = {"kind": "memory", "type": "decision", "body": text, "created_at": now}
    line = prompt_item_text(memory, now)
    assert line.endswith(reason) and "…" not in line
    observation = {
        "kind": "observation",
        "id": 7,
        "type": "command",
        "title": "Run: import the ERP file",
        "body": "stdout: " + text,
        "created_at": now,
    }
    cut = prompt_item_text(observation, now)
    assert cut.endswith("…") and estimate_tokens(cut) <= PROMPT_ITEM_TOKENS


def test_an_answer_reads_on_from_its_first_sentence_without_saying_it_twice() -> None:
    now = 1_700_000_000_000
    answer = {
        "kind": "observation",
        "id": 9,
        "type": "answer",
        "title": "Oversell fixed.",
        "body": "StockLevel has a @Version column and reserve() retries up to 3 times.",
        "created_at": now,
    }
    line = prompt_item_text(answer, now)
    assert line.endswith(
        "ANSWER Oversell fixed. StockLevel has a @Version column and reserve() retries up to 3 times."
    )
    long_sentence = "The dev server now proxies /api to the backend " + "and more " * 30
    cut = {**answer, "title": long_sentence[:150] + "…", "body": long_sentence.strip()}
    line = prompt_item_text(cut, now)
    assert line.count("The dev server now proxies") == 1
