"""The rate limiter's counter storage: limits' in-memory storage without a thread per request.

limits' MemoryStorage sweeps expired counters from a `threading.Timer(0.01)` that it starts on
a hit whenever the previous one has finished: at a hook's request rate that is a new thread for
nearly every request (2% of the event loop's samples in a profile of keyword searches, plus the
GIL hand-offs). Here the sweep runs inline, at most once a second. Counters stay exact either
way: MemoryStorage drops an expired counter whenever it is read.
"""

from __future__ import annotations

import time
from typing import Any

from limits.storage import MemoryStorage

SCHEME = "cairn-memory"
SWEEP_SECONDS = 1.0


class SweepingMemoryStorage(MemoryStorage):
    STORAGE_SCHEME = [SCHEME]  # noqa: RUF012 - the type limits declares

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options: Any):
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self._swept = time.monotonic()

    # Overrides MemoryStorage.__schedule_expiry (its name, mangled).
    def _MemoryStorage__schedule_expiry(self) -> None:
        now = time.monotonic()
        if now - self._swept >= SWEEP_SECONDS:
            self._swept = now
            self._MemoryStorage__expire_events()  # type: ignore[attr-defined]
