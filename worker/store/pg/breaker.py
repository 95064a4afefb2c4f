"""The team database's circuit breaker: once the database does not answer, the requests that need
it are refused at once (StoreUnavailable: 503) instead of each waiting on it, until a check finds
it answering again.

Why: a silent host (packets dropped, a frozen server) answers nothing and refuses nothing, so each
unit of work waits its connect timeout, or forever on a pooled connection; a hook's write waits
its whole request budget before it spools, and every tool call of the agent pays that.

When it opens: on silence only. A connection the pool waited for in vain (its connect timed out,
or failed after STALL_S), or a check that got no answer. A check (a fresh connection and `SELECT
1`, answered within PROBE_WAIT_S) is made when a unit of work failed with a connection error or
has been running longer than STALL_S: a query merely slow on an answering database leaves the
check answered, so latency alone never opens it. A server that refuses (down, restarting, full)
does not open it either: each request then fails at once by itself, and the first one after the
server's return goes through. Opening cuts the units stuck on the silent database (their sockets
shut: each fails, unacknowledged, as a lost connection does) and drops the idle connections, so
the worker's threads, pool slots and write lock are freed.

While open, a check runs every PROBE_EVERY_S; one answered closes the breaker and calls the
recovery listeners (the spool replays at once); one refused closes it too (requests fail at once
by themselves again). The request that meets the silence first still waits (its connect timeout,
or STALL_S plus PROBE_WAIT_S); the later ones do not.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from worker.clock import now_ms, to_iso
from worker.store.errors import StoreUnavailable

log = logging.getLogger(__name__)

STALL_S = 0.5  # a unit of work running this long gets the database checked
PROBE_WAIT_S = 2.0  # a check not answered in this long: the database does not answer
# (2 s, not less: opening cuts the units in flight, and a fresh connection to a database that is
# merely overloaded, e.g. building an HNSW index on 2 busy cores, can take a second)
PROBE_EVERY_S = 0.5  # while open: how often the database is checked again
STALL_PROBE_EVERY_S = 2.0  # a database that answers but is slow: checked at most this often
TICK_S = 0.05  # how often the breaker's thread looks at the units in flight
WAIT_POLL_S = 0.05  # a thread waiting for a lock or a pool slot looks at the breaker this often


class Lockable(Protocol):
    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...


@dataclass
class Unit:
    """One unit of work in flight: since when, and its connection once it has one."""

    started: float
    conn: Any = None


@dataclass(frozen=True)
class Opened:
    """Why and since when the breaker is open."""

    reason: str
    at_ms: int


class Breaker:
    """Thread-safe. `probe(timeout_s)` makes one fresh connection and runs `SELECT 1`, raising on
    failure (the pool's own). `on_silent()` drops the pool's idle connections."""

    def __init__(
        self,
        where: str,
        probe: Callable[[float], None],
        on_silent: Callable[[], None] = lambda: None,
    ) -> None:
        self.where = where
        self._probe = probe
        self._on_silent = on_silent
        self._lock = threading.Lock()
        self._units: dict[int, Unit] = {}
        self._ids = itertools.count()
        self._opened: Opened | None = None
        self._check_now = threading.Event()
        self._stop = threading.Event()
        self._last_probe = 0.0
        self._probing: threading.Thread | None = None
        self._thread: threading.Thread | None = None
        self.recovery_listeners: list[Callable[[], None]] = []
        # For status: requests refused at once, times opened, checks of the database made.
        self.refused = 0
        self.trips = 0
        self.checks = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="cairn-pg-breaker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=PROBE_WAIT_S + 1)

    # ------------------------------------------------------------------ for the store and pool
    def check(self, *, writing: bool = False) -> None:
        """Raise StoreUnavailable at once while the database is known not to answer."""
        opened = self._opened
        if opened is None:
            return
        with self._lock:
            self.refused += 1
        retry = "; nothing was written (retrying with its event id is safe)" if writing else ""
        raise StoreUnavailable(
            f"the team database {self.where} is unreachable since {to_iso(opened.at_ms)} "
            f"({opened.reason}); requests that need it are refused at once until it answers "
            f"again (checked every {PROBE_EVERY_S:g} s){retry}"
        )

    def acquire(self, lock: Lockable, *, timeout: float = -1, writing: bool = False) -> bool:
        """`lock.acquire(timeout=timeout)`, given up (StoreUnavailable) as soon as the breaker
        opens: a thread queued behind a stuck unit of work is not kept waiting on it."""
        deadline = None if timeout < 0 else time.monotonic() + timeout
        while True:
            self.check(writing=writing)
            step = (
                WAIT_POLL_S if deadline is None else min(WAIT_POLL_S, deadline - time.monotonic())
            )
            if lock.acquire(timeout=max(0.0, step)):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    @contextmanager
    def unit(self) -> Iterator[Unit]:
        """Register one unit of work in flight (watched for stalls); yields its Unit."""
        key = next(self._ids)
        unit = Unit(time.monotonic())
        with self._lock:
            self._units[key] = unit
        try:
            yield unit
        finally:
            with self._lock:
                self._units.pop(key, None)

    def connect_failed(self, reason: str, *, waited_s: float) -> None:
        """The pool could not connect: silence when it timed out or waited long to fail."""
        if "timeout" in reason.lower() or waited_s >= STALL_S:
            self._trip(reason)

    def lost(self) -> None:
        """A unit of work failed with a connection error: check the database now."""
        self._check_now.set()

    # ------------------------------------------------------------------ the watch
    def _watch(self) -> None:
        while not self._stop.wait(TICK_S):
            try:
                self._tick()
            except Exception:  # the breaker must outlive a surprise; the next tick retries
                log.exception("the team database breaker's check failed")

    def _tick(self) -> None:
        since = time.monotonic() - self._last_probe
        if self._opened is not None:
            if since >= PROBE_EVERY_S:
                answered, _reason, silent = self._probe_once()
                if not silent:
                    self._close(recovered=answered)
            return
        if self._check_now.is_set() or (
            self._oldest_age() > STALL_S and since >= STALL_PROBE_EVERY_S
        ):
            self._check_now.clear()
            _answered, reason, silent = self._probe_once()
            if silent:
                self._trip(reason)

    def _oldest_age(self) -> float:
        with self._lock:
            starts = [unit.started for unit in self._units.values()]
        return time.monotonic() - min(starts) if starts else 0.0

    def _probe_once(self) -> tuple[bool, str, bool]:
        """(answered, why not, silent): one check, waited for at most PROBE_WAIT_S; silent when
        it got no answer at all (refused or answered with an error is not silent)."""
        self._last_probe = time.monotonic()
        self.checks += 1
        if self._probing is not None and self._probing.is_alive():
            return False, f"it does not answer: no reply in {PROBE_WAIT_S:g} s", True
        outcome: list[BaseException | None] = []

        def run() -> None:
            try:
                self._probe(PROBE_WAIT_S)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        self._probing = threading.Thread(target=run, name="cairn-pg-probe", daemon=True)
        self._probing.start()
        self._probing.join(PROBE_WAIT_S)
        if not outcome:
            return False, f"it does not answer: no reply in {PROBE_WAIT_S:g} s", True
        error = outcome[0]
        if error is None:
            return True, "", False
        text = error.message if isinstance(error, StoreUnavailable) else str(error).strip()
        return False, text, "timeout" in text.lower()

    def _trip(self, reason: str) -> None:
        with self._lock:
            if self._opened is not None:
                return
            self._opened = Opened(reason, now_ms())
            self.trips += 1
            self._last_probe = time.monotonic()
            stuck = [unit.conn for unit in self._units.values() if unit.conn is not None]
        log.warning("team database %s: refusing requests at once (%s)", self.where, reason)
        for conn in stuck:
            sever(conn)
        self._on_silent()

    def _close(self, *, recovered: bool) -> None:
        with self._lock:
            opened, self._opened = self._opened, None
        self._check_now.clear()  # the units cut while open failed for a known reason
        if opened is None:
            return
        if not recovered:
            log.warning("team database %s refuses connections now: requests try it", self.where)
            return
        log.warning("team database %s answers again: requests go through", self.where)
        for listener in self.recovery_listeners:
            try:
                listener()
            except Exception:
                log.exception("recovery listener failed")

    def status(self) -> dict[str, Any]:
        opened = self._opened
        return {
            "state": "closed" if opened is None else "open",
            "since": None if opened is None else to_iso(opened.at_ms),
            "reason": None if opened is None else opened.reason,
            "trips": self.trips,
            "refused": self.refused,
            "checks": self.checks,
        }


def sever(conn: Any) -> None:
    """Shut a connection's socket from another thread: the unit waiting on it fails at once with
    a lost connection (the connection itself is closed by its own thread, never here)."""
    try:
        fd = conn.fileno()
        with socket.socket(fileno=socket.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # already closed or broken: nothing to cut
        log.debug("could not cut a stuck connection", exc_info=True)
