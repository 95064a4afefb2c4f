"""Cairn: the one object holding the worker's dependencies, created in the app lifespan."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from worker.auth import DashboardLogins, TokenKeeper
from worker.events import Broadcaster
from worker.settings import Settings
from worker.store import Store

ItemListener = Callable[[str, list[int]], None]


@dataclass
class Cairn:
    settings: Settings
    store: Store
    tokens: TokenKeeper
    events: Broadcaster
    started_at_ms: int
    port: int
    logins: DashboardLogins
    # Listeners told about new items (kind, ids), e.g. the background embedder.
    item_listeners: list[ItemListener] = field(default_factory=list)
    # Named background services (embedder, scheduler...) other modules attach in the lifespan.
    services: dict[str, Any] = field(default_factory=dict)

    def after_items(self, kind: str, ids: list[int]) -> None:
        if ids:
            for listener in self.item_listeners:
                listener(kind, ids)

    def after_observations(self, ids: list[int]) -> None:
        self.after_items("observation", ids)
