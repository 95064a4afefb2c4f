"""Loads the in-memory keyword index in the background and keeps it in step.

At start the index is built from the whole table (seconds at 100k items; a search arriving
meanwhile waits for it). Then, every second, it applies the writes committed since (so a query seldom has
any left to apply itself) and builds a fresh copy when removed and added rows have piled up.
"""

from __future__ import annotations

import logging
import threading

import anyio.to_thread

from worker.retrieval.keyword_index import KeywordIndex
from worker.store.backend import Backend

log = logging.getLogger(__name__)

FOLLOW_SECONDS = 1.0


class KeywordIndexService:
    def __init__(
        self, store: Backend, index: KeywordIndex, *, interval: float = FOLLOW_SECONDS
    ) -> None:
        self.store = store
        self.index = index
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cairn-keyword-index", daemon=True)
        self._thread.start()

    def status(self) -> dict[str, object]:
        return self.index.status()

    async def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            await anyio.to_thread.run_sync(self._thread.join, 10)

    def _run(self) -> None:
        self._load()
        while not self._stop.wait(self.interval):
            index = self.index
            try:
                if index.wants_rebuild or not index.ready:
                    self._load()
                else:
                    self.store.read_sync(index.refresh)
            except Exception:
                if self._stop.is_set():
                    return  # the store closed under us at shutdown
                log.exception("keyword index: applying changes failed")

    def _load(self) -> None:
        index = self.index
        try:
            self.store.read_sync(index.load)
        except Exception as exc:
            if self._stop.is_set():
                return
            if index.ready:  # a rebuild failed: the copy in use still follows every write
                index.state, index.error = "ready", f"rebuild failed: {exc}"
                index.wants_rebuild = False
                log.exception("keyword index not rebuilt; the loaded copy stays in use")
            else:
                index.state, index.error = "failed", str(exc)
                log.exception("keyword index not loaded; the next search tries again")
                self._stop.set()  # not retried every second: restart the worker to try again
