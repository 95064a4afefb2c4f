"""uvicorn's HTTP protocol with a header deadline and a connection cap (slowloris).

uvicorn times out idle keep-alive connections only after a response; a connection that sends
nothing, or headers a byte at a time, is kept forever. With the default 1024 file descriptors a
thousand such sockets leave no descriptor to accept a hook's connection. Here each connection
must finish its request headers within `header_timeout` seconds of connecting (or of the first
byte of a later request on it), and past `max_connections` open connections a new one closes the
connection that has waited longest for its headers (the newcomer only if none is waiting), so
hooks, which send their request at once, keep getting through.

The same holds for the body: once the headers are in, the rest of the request must arrive within
`body_timeout` seconds (a body sent a byte at a time would hold the connection, and the handler
waiting on it, forever). Time the application spends not reading (flow control paused the
socket) does not count against the client.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from worker.settings import Settings

log = logging.getLogger(__name__)
WARN_EVERY_SECONDS = 60.0  # a flood sheds thousands of connections: one log line a minute


def connection_cap(settings: Settings) -> int:
    """CAIRN_MAX_CONNECTIONS, or (0 = auto) the descriptor limit less a reserve for the
    database, logs, model files and threads, so accepting never runs out of descriptors."""
    if settings.server.max_connections > 0:
        return settings.server.max_connections
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 65536
    return max(16, int(soft) - settings.server.connection_fd_reserve)


class GuardedProtocol(HttpToolsProtocol):
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1000
    _last_warning = float("-inf")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_timer()
        if len(self.connections) > self.max_connections:
            self._shed()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_timer()  # a later request on a kept-alive connection

    def on_headers_complete(self) -> None:
        self._disarm_timer()
        super().on_headers_complete()
        self._arm_timer(self.body_timeout)  # disarmed when the message completes

    def on_message_complete(self) -> None:
        self._disarm_timer()
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_timer()
        super().connection_lost(exc)

    def _arm_timer(self, timeout: float | None = None) -> None:
        if self._timer is None:
            self._deadline = self.loop.time() + (timeout or self.header_timeout)
            self._timer = self.loop.call_at(self._deadline, self._request_too_slow)

    def _disarm_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _request_too_slow(self) -> None:
        self._timer = None
        if self.flow.read_paused:  # the application is not reading: not the client's fault
            self._arm_timer(self.body_timeout)
            return
        if not self.transport.is_closing():
            self.transport.close()

    def _shed(self) -> None:
        # This connection is waiting too (its timer was just armed), with the latest deadline.
        waiting = [
            c for c in self.connections if isinstance(c, GuardedProtocol) and c._timer is not None
        ]
        victim = min(waiting, key=lambda c: c._deadline, default=self)
        now = self.loop.time()
        if now - GuardedProtocol._last_warning >= WARN_EVERY_SECONDS:
            GuardedProtocol._last_warning = now
            log.warning(
                "%d connections open (cap %d): closing those waiting longest for their headers",
                len(self.connections),
                self.max_connections,
            )
        victim._disarm_timer()
        victim.transport.close()


def guarded_protocol(settings: Settings) -> type[GuardedProtocol]:
    """The protocol class for uvicorn.Config(http=...), with this worker's limits."""
    return type(
        "CairnHttpProtocol",
        (GuardedProtocol,),
        {
            "header_timeout": settings.server.header_timeout_seconds,
            "body_timeout": settings.server.body_timeout_seconds,
            "max_connections": connection_cap(settings),
        },
    )
