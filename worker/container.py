"""Cairn: the one object holding the worker's dependencies, created in the app lifespan.

(The dependency container; "context" elsewhere means the text injected into a session.)"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from worker.auth import DashboardLogins, LoginLinks, TokenKeeper
from worker.memory.scheduler import DecayService
from worker.metrics import Metrics
from worker.retrieval.db_keywords import KeywordScorer
from worker.retrieval.keyword_index import KeywordIndex
from worker.retrieval.keyword_service import KeywordIndexService
from worker.retrieval.service import EmbeddingService
from worker.settings import Settings
from worker.spool import SpoolReplayer
from worker.store.backend import Backend

if TYPE_CHECKING:
    import anyio

ItemListener = Callable[[str, list[int]], None]


class Events(Protocol):
    """What the worker needs of the SSE broadcaster (worker.events.Broadcaster)."""

    @property
    def client_count(self) -> int: ...

    def publish(self, event: str, data: dict[str, Any]) -> Any: ...

    def subscribe(self) -> Any: ...

    def stream(self, queue: Any, last_event_id: str | None) -> AsyncIterator[dict[str, str]]: ...

    def close(self) -> None: ...


class Service(Protocol):
    """A background service as /api/status lists it."""

    def status(self) -> Any: ...


def reader_of(store: Backend, author: str) -> str | None:
    """Whose private rows a read of `store` by `author` may show: None (every row) on SQLite,
    one user's file; on a team database, `author`'s own and the shared ones (store/privacy.py)."""
    return None if store.backend == "sqlite" else author


@dataclass(frozen=True)
class ImportMark:
    """How far embedding had come when an import's first batch arrived: the dashboard's
    progress line counts the items to embed from there."""

    embedded: int


@dataclass
class Cairn:
    settings: Settings
    store: Backend
    tokens: TokenKeeper
    events: Events
    started_at_ms: int
    port: int
    logins: DashboardLogins
    # The keyword scorer: an in-memory copy of the keyword index (loaded by `keyword_index`),
    # or on a team database the database's own (retrieval/db_keywords.py).
    keywords: KeywordScorer = field(default_factory=KeywordIndex)
    # Listeners told about new items (kind, ids), e.g. the background embedder.
    item_listeners: list[ItemListener] = field(default_factory=list)
    # Background services, attached in the lifespan (None: not running in this app).
    keyword_index: KeywordIndexService | None = None
    embeddings: EmbeddingService | None = None
    decay: DecayService | None = None
    spool: SpoolReplayer | None = None
    # On a team database: the feed relayed to and from the other workers (LISTEN/NOTIFY).
    team_feed: Service | None = None
    # One-time login links, made on the first request for one.
    login_links: LoginLinks | None = None
    # Set by an import's first batch, cleared once its backlog is embedded.
    import_mark: ImportMark | None = None
    # Who rows are by when a request names nobody (settings.author, else git/OS user at start).
    author: str = "unknown"
    # One database probe of /api/status at a time (made on first use: it needs the event loop).
    status_probes: anyio.CapacityLimiter | None = None
    # What GET /metrics reports (the middleware counts requests into the same object).
    metrics: Metrics = field(default_factory=Metrics)
    # Each checkout's author, read once (author_for).
    _authors: dict[str, str] = field(default_factory=dict)

    def author_for(self, project: str | None) -> str:
        """Who a row about `project` is by, when the request names nobody: the one authorship
        rule (docs/team.md, Authors): CAIRN_AUTHOR if set; else git's user.email for that
        checkout (its own config, then the global one, as git ranks them); else the OS user.
        A project key that is no local folder (a team remote) takes the worker's own."""
        if self.settings.author or not project or not os.path.isdir(project):
            return self.author
        found = self._authors.get(project)
        if found is None:
            from worker.project_identity import author  # reads git config files: once each

            found = self._authors[project] = author(project)
        return found

    @property
    def services(self) -> dict[str, Service]:
        """The running services by name, in start order (shut down in reverse)."""
        running: dict[str, Service | None] = {
            "keyword_index": self.keyword_index,
            "embeddings": self.embeddings,
            "decay": self.decay,
            "spool": self.spool,
            "team_feed": self.team_feed,
            "login_links": self.login_links,
        }
        return {name: service for name, service in running.items() if service is not None}

    @property
    def reader(self) -> str | None:
        """Whose private rows this worker's reads may show (store/privacy.py): on a team
        database, its own author's (prompts and observations of teammates only when shared);
        on the local database, None: every row is this user's."""
        return reader_of(self.store, self.author)

    def visible(self, row: dict[str, Any]) -> bool:
        """Whether a prompt or observation row read by id may be shown to this worker's user."""
        reader = self.reader
        return reader is None or bool(row.get("shared")) or row.get("author") == reader

    def after_items(self, kind: str, ids: list[int]) -> None:
        if ids:
            for listener in self.item_listeners:
                listener(kind, ids)

    def after_observations(self, ids: list[int]) -> None:
        self.after_items("observation", ids)
