"""The rate limiter's counter storage: fixed-window counters in memory, no thread per request.

limits' MemoryStorage sweeps expired counters from a `threading.Timer(0.01)` that it starts on
a hit whenever the previous one has finished: at a hook's request rate that is a new thread for
nearly every request (2% of the event loop's samples in a profile of keyword searches, plus the
GIL hand-offs). This is a storage backend of our own, through limits' documented extension point
(subclass `limits.storage.Storage`, name a `STORAGE_SCHEME`): the sweep runs inline, at most once
a second, and a counter read after its window is dropped at once, so counts stay exact. It
covers the fixed-window strategy, the one slowapi uses by default and Cairn configures.
"""

from __future__ import annotations

import threading
import time

from limits.storage import Storage

SCHEME = "cairn-memory"
SWEEP_SECONDS = 1.0


class SweepingMemoryStorage(Storage):
    STORAGE_SCHEME = [SCHEME]  # noqa: RUF012 - the type limits declares

    def __init__(
        self, uri: str | None = None, wrap_exceptions: bool = False, **options: float | str | bool
    ) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self._counts: dict[str, int] = {}
        self._expiries: dict[str, float] = {}  # time.time() at which a key's window ends
        self._lock = threading.Lock()
        self._swept = time.monotonic()

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ValueError

    def _drop_if_expired(self, key: str, now: float) -> None:
        if self._expiries.get(key, 0.0) <= now:
            self._counts.pop(key, None)
            self._expiries.pop(key, None)

    def _sweep(self, now: float) -> None:
        """Forget every ended window (keeps memory bounded by the keys of the last second)."""
        if time.monotonic() - self._swept < SWEEP_SECONDS:
            return
        self._swept = time.monotonic()
        for key in [k for k, end in self._expiries.items() if end <= now]:
            self._counts.pop(key, None)
            self._expiries.pop(key, None)

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = time.time()
        with self._lock:
            self._sweep(now)
            self._drop_if_expired(key, now)
            count = self._counts.get(key, 0) + amount
            self._counts[key] = count
            if count == amount:  # the first hit of a window starts it
                self._expiries[key] = now + expiry
            return count

    def get(self, key: str) -> int:
        with self._lock:
            self._drop_if_expired(key, time.time())
            return self._counts.get(key, 0)

    def get_expiry(self, key: str) -> float:
        with self._lock:
            return self._expiries.get(key, time.time())

    def check(self) -> bool:
        return True

    def reset(self) -> int | None:
        with self._lock:
            cleared = len(self._counts)
            self._counts.clear()
            self._expiries.clear()
            return cleared

    def clear(self, key: str) -> None:
        with self._lock:
            self._counts.pop(key, None)
            self._expiries.pop(key, None)
