"""worker.json and the one-worker-per-home lock, in-process."""

from __future__ import annotations

import json
import os

import pytest

from worker.runtime import (
    AlreadyRunning,
    acquire_lock,
    lock_is_held,
    read_runtime,
    remove_runtime,
    write_runtime,
)
from worker.settings import Settings


def test_runtime_file_round_trip_only_while_the_lock_is_held(settings: Settings) -> None:
    lock = acquire_lock(settings)
    try:
        write_runtime(settings, 41234)
        info = read_runtime(settings)
        assert info is not None and info["pid"] == os.getpid() and info["port"] == 41234
        assert info["url"] == "http://127.0.0.1:41234" and "started_at" in info
        assert not list(settings.home.glob(".worker.json.*"))  # atomic: no temp file left
    finally:
        lock.close()
    # The same pid, but nobody holds the home lock any more: a stale file (pid reuse case).
    assert read_runtime(settings) is None


def test_second_lock_raises_already_running_with_the_info(settings: Settings) -> None:
    lock = acquire_lock(settings)
    try:
        write_runtime(settings, 40000)
        assert lock_is_held(settings.lock_path)
        with pytest.raises(AlreadyRunning) as info:
            acquire_lock(settings)
        assert info.value.info is not None and info.value.info["port"] == 40000
    finally:
        lock.close()
    assert not lock_is_held(settings.lock_path)


def test_acquiring_the_lock_drops_a_stale_runtime_file(settings: Settings) -> None:
    settings.home.mkdir(parents=True)
    settings.runtime_path.write_text(json.dumps({"pid": 999999999, "port": 1}))
    lock = acquire_lock(settings)
    try:
        assert not settings.runtime_path.exists()
    finally:
        lock.close()


@pytest.mark.parametrize("content", ["", "{", "[]", '{"pid": "x", "port": 1}', '{"pid": 1}'])
def test_unreadable_runtime_files_count_as_no_worker(settings: Settings, content: str) -> None:
    settings.home.mkdir(parents=True)
    settings.runtime_path.write_text(content)
    assert read_runtime(settings) is None


def test_remove_runtime_leaves_another_workers_file_alone(settings: Settings) -> None:
    settings.home.mkdir(parents=True)
    settings.runtime_path.write_text(json.dumps({"pid": os.getpid() + 1, "port": 1}))
    remove_runtime(settings)
    assert settings.runtime_path.exists()
    write_runtime(settings, 5)
    remove_runtime(settings)
    assert not settings.runtime_path.exists()


def test_a_stop_signal_before_uvicorn_takes_over_stops_the_server() -> None:
    import signal as signals

    import uvicorn

    from worker.server import stop_handler

    server = uvicorn.Server(uvicorn.Config(app=None))  # type: ignore[arg-type]
    handle = stop_handler(server)
    handle(signals.SIGTERM, None)  # `cairn stop` right after start, before uvicorn's handlers
    assert server.should_exit is True
    handle(signals.SIGTERM, None)  # uvicorn's re-raise after its shutdown: absorbed, no error
    assert server.should_exit is True
