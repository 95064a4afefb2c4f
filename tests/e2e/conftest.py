from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.worker_process import WorkerProcess


@pytest.fixture
def worker(isolated_home: Path) -> Iterator[WorkerProcess]:
    """A real uvicorn worker on a free loopback port, stopped (by its PID) after the test."""
    proc = WorkerProcess(home=isolated_home).start()
    try:
        yield proc
    finally:
        proc.stop()
