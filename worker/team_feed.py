"""The live feed across a team's workers: PostgreSQL LISTEN/NOTIFY under the SSE broadcaster.

On a team database every worker publishes its events to its own dashboard (worker/events.py) as
on SQLite, and relays the ones its teammates may see to the others with `pg_notify` on one
channel; each worker LISTENs on that channel and publishes what other workers sent to its own
dashboard. Nothing polls the database: a listening connection blocks until the server delivers
a notification (or the wait times out, only to check for shutdown).

What is relayed follows the privacy rule of the store (worker/store/privacy.py): memories,
summaries, checkpoints and sessions are the team's; a prompt or a tool observation only when its
row is shared. The payload is capped below PostgreSQL's 8,000-byte limit by shortening long
text fields (a feed line shows a snippet; the full row is one click away).

Threads, not the event loop: sending goes through a queue to a thread with its own connection,
so a slow or lost database never blocks a request; the listener thread hands each event to the
event loop with `call_soon_threadsafe`. A lost connection is reopened with a growing pause;
status says whether the feed is connected and the last error (the URL is never shown).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import threading
import uuid
from collections.abc import AsyncIterator
from typing import Any

from worker.team import redact

log = logging.getLogger(__name__)

CHANNEL = "cairn_feed"
# PostgreSQL refuses a payload of 8,000 bytes or more.
MAX_PAYLOAD = 7_500
TEXT_FIELDS = ("body", "text", "content", "summary", "request", "learned", "title")
SNIPPET_CHARS = 600
TEAM_EVENTS = ("memory.", "summary.", "checkpoint.", "session.")
PRIVATE_EVENTS = ("prompt.", "observation.")
LISTEN_WAIT_S = 1.0
RETRY_MAX_S = 30.0


def is_shared(event: str, data: dict[str, Any]) -> bool:
    """Whether teammates may see this event (the store's privacy rule, applied to the feed)."""
    if event.startswith(TEAM_EVENTS):
        return True
    if event.startswith(PRIVATE_EVENTS):
        return bool(data.get("shared"))
    return False


def payload(origin: str, event: str, data: dict[str, Any]) -> str | None:
    """The NOTIFY payload, shortened to fit; None when even the shortened form does not fit."""
    body = {"origin": origin, "event": event, "data": data}
    text = json.dumps(body, ensure_ascii=False, default=str)
    if len(text.encode()) <= MAX_PAYLOAD:
        return text
    short = dict(data)
    for key in TEXT_FIELDS:
        value = short.get(key)
        if isinstance(value, str) and len(value) > SNIPPET_CHARS:
            short[key] = value[:SNIPPET_CHARS] + "…"
    short["truncated"] = True
    text = json.dumps({**body, "data": short}, ensure_ascii=False, default=str)
    return text if len(text.encode()) <= MAX_PAYLOAD else None


class TeamFeed:
    """The worker's `Events` (container.py) on a team database: the local broadcaster, plus
    relaying to and from the other workers."""

    def __init__(self, url: str, local: Any) -> None:
        self._url = url
        self.where = redact(url)
        self.local = local
        self.origin = uuid.uuid4().hex
        # This worker's own channel: only its listener hears it (the wake-up when stopping).
        self._wake_channel = f"cairn_wake_{self.origin}"
        self._outbox: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connected = False
        self.last_error = ""
        self.sent = 0
        self.received = 0
        self.skipped = 0

    # The broadcaster's interface (container.Events), relaying what teammates may see.
    @property
    def client_count(self) -> int:
        return int(self.local.client_count)

    def publish(self, event: str, data: dict[str, Any]) -> Any:
        item = self.local.publish(event, data)
        if is_shared(event, data):
            text = payload(self.origin, event, data)
            if text is None:
                self.skipped += 1
            else:
                self._outbox.put(text)
        return item

    def subscribe(self) -> Any:
        return self.local.subscribe()

    def stream(self, queue: Any, last_event_id: str | None) -> AsyncIterator[dict[str, str]]:
        result: AsyncIterator[dict[str, str]] = self.local.stream(queue, last_event_id)
        return result

    def close(self) -> None:
        self.local.close()

    # Lifecycle (a background service of the worker).
    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        for name, target in (
            ("cairn-feed-send", self._send_main),
            ("cairn-feed-listen", self._listen_main),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    async def stop(self) -> None:
        self._stop.set()
        self._outbox.put(None)
        for thread in self._threads:
            await asyncio.to_thread(thread.join, LISTEN_WAIT_S * 3)

    def status(self) -> dict[str, Any]:
        return {
            "running": any(t.is_alive() for t in self._threads),
            "database": self.where,
            "connected": self.connected,
            "last_error": self.last_error,
            "sent": self.sent,
            "received": self.received,
            "too_large": self.skipped,
        }

    # Threads.
    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self._url, autocommit=True, connect_timeout=5)

    def _failed(self, exc: Exception, pause: float) -> float:
        from worker.team import safe_message

        self.connected = False
        self.last_error = safe_message(str(exc).strip(), self._url)
        log.warning("team feed: %s (retrying in %.0f s)", self.last_error, pause)
        self._stop.wait(pause)
        return min(pause * 2, RETRY_MAX_S)

    def _send_main(self) -> None:
        pause = 1.0
        pending: str | None = None
        while not self._stop.is_set():
            try:
                with self._connect() as conn:
                    pause = 1.0
                    while not self._stop.is_set():
                        if pending is None:
                            pending = self._outbox.get()
                            if pending is None:
                                # Wake our listener out of its wait, so stopping takes no second.
                                conn.execute(f"NOTIFY {self._wake_channel}")
                                return
                        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, pending))
                        self.sent += 1
                        pending = None
            except Exception as exc:  # the event is kept in `pending` and sent once reconnected
                pause = self._failed(exc, pause)

    def _listen_main(self) -> None:
        pause = 1.0
        while not self._stop.is_set():
            try:
                with self._connect() as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    conn.execute(f"LISTEN {self._wake_channel}")
                    self.connected, self.last_error, pause = True, "", 1.0
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=LISTEN_WAIT_S):
                            if note.channel == CHANNEL:
                                self._deliver(note.payload)
                            if self._stop.is_set():
                                break
            except Exception as exc:
                pause = self._failed(exc, pause)
        self.connected = False

    def _deliver(self, text: str) -> None:
        with contextlib.suppress(ValueError, TypeError, KeyError):
            message = json.loads(text)
            if message["origin"] == self.origin or self._loop is None:
                return
            event, data = str(message["event"]), dict(message["data"])
            self.received += 1
            with contextlib.suppress(RuntimeError):  # the loop is closed: shutting down
                self._loop.call_soon_threadsafe(self.local.publish, event, data)
