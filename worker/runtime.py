"""The runtime file ($CAIRN_HOME/worker.json) and the one-worker-per-home lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import IO, Any

from worker import __version__
from worker.clock import now_ms, to_iso
from worker.settings import Settings


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
        "host": settings.host,
        "version": __version__,
        "started_at": to_iso(now_ms()),
        "url": f"http://{settings.host}:{port}",
    }
    settings.home.mkdir(parents=True, exist_ok=True)
    tmp = settings.runtime_path.with_name(f".worker.json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(tmp, settings.runtime_path)


def read_runtime(settings: Settings) -> dict[str, Any] | None:
    """The live worker's runtime info, or None (a stale file with a dead pid counts as none)."""
    try:
        info = json.loads(settings.runtime_path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not pid_alive(int(info.get("pid", 0))):
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
    settings.home.mkdir(parents=True, exist_ok=True)
    handle = open(settings.lock_path, "a+")  # noqa: SIM115 - held open for the process lifetime
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise AlreadyRunning(read_runtime(settings)) from None
    # A runtime file left by a worker that died without cleaning up is stale: drop it.
    if settings.runtime_path.exists() and read_runtime(settings) is None:
        with contextlib.suppress(OSError):
            settings.runtime_path.unlink()
    return handle


def lock_is_held(path: Path) -> bool:
    try:
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return False
    except OSError:
        return False
