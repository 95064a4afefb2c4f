"""The SSE broadcaster: a bounded ring buffer of events, per-client queues, Last-Event-ID resume."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from worker.clock import now_ms
from worker.errors import ServiceUnavailable


@dataclass(frozen=True)
class Event:
    id: str
    event: str
    data: dict[str, Any]


def _seq_of(event: Event) -> int:
    return int(event.id.rsplit("-", 1)[1])


def format_event(event: Event) -> dict[str, str]:
    """The SSE fields for one event (pure: what sse-starlette sends)."""
    return {
        "id": event.id,
        "event": event.event,
        "data": json.dumps(event.data, ensure_ascii=False),
    }


class Broadcaster:
    def __init__(self, *, buffer_size: int, max_clients: int, client_queue: int = 2000) -> None:
        # Ids are "<boot>-<seq>" so a Last-Event-ID from an earlier worker run is recognised.
        self.boot = str(now_ms())
        self._seq = 0
        self._buffer: deque[Event] = deque(maxlen=buffer_size)
        self._clients: set[asyncio.Queue[Event | None]] = set()
        self.max_clients = max_clients
        self.client_queue = client_queue
        self.dropped_clients = 0

    @property
    def client_count(self) -> int:
        return len(self._clients)

    def publish(self, event: str, data: dict[str, Any]) -> Event:
        self._seq += 1
        item = Event(id=f"{self.boot}-{self._seq}", event=event, data=data)
        self._buffer.append(item)
        for queue in list(self._clients):
            try:
                queue.put_nowait(item)
            except asyncio.QueueFull:
                # A client too slow to keep up is cut off; it reconnects and resumes by id.
                self._clients.discard(queue)
                self.dropped_clients += 1
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait(None)
        return item

    def backlog(self, last_event_id: str | None) -> list[Event]:
        """Buffered events after `last_event_id`. When the gap cannot be filled (an id from an
        earlier worker run, or older than the ring buffer) a `stream.reset` event comes first:
        the client should reload its view instead of trusting the stream to be complete."""
        if not last_event_id:
            return []
        boot, _, seq_text = last_event_id.partition("-")
        if boot != self.boot or not seq_text.isascii() or not seq_text.isdigit():
            return [self._reset("the worker restarted"), *self._buffer]
        seq = int(seq_text)
        if seq > self._seq:
            return [self._reset("unknown event id")]
        oldest = _seq_of(self._buffer[0]) if self._buffer else self._seq + 1
        missed = [e for e in self._buffer if _seq_of(e) > seq]
        if seq + 1 < oldest:
            return [self._reset("events were missed (older than the buffer)"), *missed]
        return missed

    def _reset(self, reason: str) -> Event:
        # Carries the current id so a client resuming from it gets exactly what follows.
        return Event(id=f"{self.boot}-{self._seq}", event="stream.reset", data={"reason": reason})

    def subscribe(self) -> asyncio.Queue[Event | None]:
        if len(self._clients) >= self.max_clients:
            raise ServiceUnavailable(
                f"too many event-stream clients (limit {self.max_clients}); close one and retry"
            )
        queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=self.client_queue)
        self._clients.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Event | None]) -> None:
        self._clients.discard(queue)

    def close(self) -> None:
        for queue in list(self._clients):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
        self._clients.clear()

    async def stream(
        self, queue: asyncio.Queue[Event | None], last_event_id: str | None
    ) -> AsyncIterator[dict[str, str]]:
        try:
            sent = 0
            for old in self.backlog(last_event_id):
                sent = max(sent, _seq_of(old))
                yield format_event(old)
            while True:
                item = await queue.get()
                if item is None:
                    return
                if _seq_of(item) <= sent:
                    continue  # published between subscribe() and the backlog: already sent
                yield format_event(item)
        finally:
            self.unsubscribe(queue)
