"""Background threads run at a lower priority than requests (Linux per-thread nice)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from worker.priority import BACKGROUND_NICE, lower_this_thread
from worker.retrieval.embedder import FakeEmbedder
from worker.retrieval.service import EmbeddingService
from worker.settings import load_settings
from worker.store import Store, observations

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice")


def _nice(thread: threading.Thread) -> int:
    assert thread.native_id is not None
    return os.getpriority(os.PRIO_PROCESS, thread.native_id)


def test_a_lowered_thread_and_the_threads_it_starts_yield_the_caller_keeps_its_own() -> None:
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: dict[str, int] = {}

    def child() -> None:
        seen["child"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def background() -> None:
        seen["lowered"] = int(lower_this_thread())
        seen["self"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        started = threading.Thread(target=child)
        started.start()
        started.join()
        seen["again"] = int(lower_this_thread())  # already as low: nothing to do, still true

    thread = threading.Thread(target=background)
    thread.start()
    thread.join()
    expected = max(before, BACKGROUND_NICE)
    assert seen == {"lowered": 1, "self": expected, "child": expected, "again": 1}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


def test_the_background_embedder_runs_below_the_request_threads(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path, embed_enabled=True)
    store = Store(settings.db_path)
    store.open()
    store.write_sync(
        lambda c: observations.insert_many(
            c, [{"project": "/p", "type": "note", "title": "redis cache eviction"}]
        )
    )
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    service = EmbeddingService(settings, store, factory=lambda: FakeEmbedder(64))
    service.start()
    try:
        deadline = time.monotonic() + 20
        while not (service.ready and service.wait_idle(1)):
            assert time.monotonic() < deadline, service.status()
        (embedder,) = [t for t in threading.enumerate() if t.name == "cairn-embedder"]
        assert _nice(embedder) == max(before, BACKGROUND_NICE)
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
    finally:
        anyio.run(service.stop)
        store.close()
