"""One small corpus written the same way on either backend (same ids), and a searcher over a
store: its keyword scorer and the embedding service (fake embedder) idle."""

from __future__ import annotations

import random
from typing import Any

from worker.retrieval.db_keywords import DatabaseKeywords, KeywordScorer
from worker.retrieval.embedder import FakeEmbedder
from worker.retrieval.keyword_index import KeywordIndex
from worker.retrieval.service import EmbeddingService
from worker.settings import Settings
from worker.store import memories, observations, projects, sessions, summaries

_TOPICS = [
    "postgres connection pool exhausted under load",
    "redis cache eviction policy set to allkeys-lru",
    "the parser rejects getUserById when the token expired",
    "deploy nginx reload after the certificate refresh",
    "flaky test in OrderService caused by a race on the session cookie",
    "billing webhook retries with exponential backoff",
    "migration adds an index to the invoices table",
    "la funzione parse_config legge il file di configurazione",
]


def write_corpus(store: Any) -> None:
    """The same items on either backend, in the same order (so the same ids): observations in
    two sessions' threads, memories (one global), a prompt and a summary, then an edit."""
    rng = random.Random(4)

    def write(c: Any) -> None:
        pid = projects.ensure(c, "/repo")
        for n in range(2):
            sessions.ensure(c, f"s{n}", pid)
        for i in range(60):
            topic, other = rng.choice(_TOPICS), rng.choice(_TOPICS)
            observations.insert(
                c,
                {
                    "project": "/repo",
                    "session_id": f"s{i % 2}",
                    "type": rng.choice(("note", "command", "file_write")),
                    "title": topic.split(" the ")[0],
                    "body": f"{topic}. Later: {other}",
                    "files": [f"src/{rng.choice(['app', 'db', 'cache'])}.py"],
                    "created_at_ms": 1_700_000_000_000 + i * 60_000,
                },
            )
        for i, topic in enumerate(_TOPICS):
            item: dict[str, Any] = {"kind": "decision", "content": f"decided: {topic}"}
            item.update({"scope": "global"} if i == 0 else {"scope": "project", "project": "/repo"})
            memories.insert(c, item)
        sessions.add_prompt(c, "s0", pid, "why is the redis cache evicting keys?", None)
        summaries.upsert(
            c,
            "s1",
            pid,
            request="fix the flaky OrderService test",
            completed=["made the session cookie race deterministic"],
            learned=["the race came from a shared cookie jar"],
            next_steps=["watch the billing webhook retries"],
            files=["src/app.py"],
        )

    store.write_sync(write)
    store.write_sync(lambda c: memories.update(c, 3, {"content": "decided: pin nginx to 1.25"}))


def searcher(store: Any, settings: Settings) -> tuple[KeywordScorer, EmbeddingService]:
    """As the app sets them up: on SQLite the in-memory keyword index, loaded; on a team
    database the database's keyword search (retrieval/db_keywords.py)."""
    keywords: KeywordScorer
    if store.backend == "postgres":
        keywords = DatabaseKeywords()
    else:
        keywords = KeywordIndex()
        store.read_sync(keywords.load)
    service = EmbeddingService(settings, store, factory=lambda: FakeEmbedder(64))
    service.start()
    assert service.wait_idle(30), service.status()
    return keywords, service
