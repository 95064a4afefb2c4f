"""The runtime file ($CAIRN_HOME/worker.json) and the one-worker-per-home lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from pathlib import Path
from typing import IO, Any

from worker import __version__
from worker.clock import now_ms, to_iso
from worker.home import ensure_home, private_opener, private_temp
from worker.settings import Settings

log = logging.getLogger(__name__)


class AlreadyRunning(Exception):
    def __init__(self, info: dict[str, Any] | None) -> None:
        super().__init__("a Cairn worker already runs for this home")
        self.info = info


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_runtime(settings: Settings, port: int) -> None:
    """Write worker.json atomically (tmp file + rename)."""
    info = {
        "pid": os.getpid(),
        "port": port,
        "host": settings.server.host,
        "version": __version__,
        "started_at": to_iso(now_ms()),
        "url": f"http://{settings.server.host}:{port}",
    }
    ensure_home(settings.home)
    with private_temp(settings.runtime_path) as handle:
        handle.write(json.dumps(info, indent=2) + "\n")


def read_runtime(settings: Settings) -> dict[str, Any] | None:
    """The live worker's runtime info, or None (a stale file with a dead pid counts as none)."""
    try:
        info = json.loads(settings.runtime_path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    try:
        pid = int(info.get("pid", 0))
        int(info.get("port", 0))
    except (TypeError, ValueError):
        return None
    # A dead pid is stale; so is a live pid that no longer holds the home lock (pid reuse).
    if not pid_alive(pid) or not lock_is_held(settings.lock_path):
        return None
    return info


def remove_runtime(settings: Settings) -> None:
    try:
        info = json.loads(settings.runtime_path.read_text())
        if int(info.get("pid", 0)) != os.getpid():
            return  # not ours: another worker replaced it
    except (OSError, ValueError):
        return
    with contextlib.suppress(OSError):
        settings.runtime_path.unlink()


def acquire_lock(settings: Settings) -> IO[str]:
    """Hold an exclusive lock on $CAIRN_HOME/worker.lock for the worker's lifetime."""
    ensure_home(settings.home)
    handle = open(settings.lock_path, "a+", opener=private_opener)  # noqa: SIM115 - held open for the process lifetime
    # Clients probing the lock (lock_is_held) hold it for microseconds: retry briefly.
    deadline = time.monotonic() + 0.5
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() < deadline:
                time.sleep(0.02)
                continue
            handle.close()
            raise AlreadyRunning(_runtime_info(settings)) from None
    # We hold the lock, so any runtime file left behind is from a worker that died: drop it.
    if settings.runtime_path.exists():
        log.info("removing stale runtime file %s", settings.runtime_path)
        with contextlib.suppress(OSError):
            settings.runtime_path.unlink()
    return handle


def _runtime_info(settings: Settings) -> dict[str, Any] | None:
    """worker.json as written by the running worker (which holds the lock), if readable."""
    try:
        info = json.loads(settings.runtime_path.read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def lock_is_held(path: Path) -> bool:
    """True while a worker holds the home lock (a shared probe: probers never block each other)."""
    try:
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return False
    except OSError:
        return False
