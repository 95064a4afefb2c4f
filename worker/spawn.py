"""Start the worker in the background and wait until it answers (for `cairn start`, `cairn
install` and the MCP server, which starts a worker that is down)."""

from __future__ import annotations

import subprocess
import time
from typing import Any

from worker.client import ApiError, WorkerDown, request
from worker.home import ensure_home, private_opener
from worker.launch import child_env, module_argv
from worker.runtime import read_runtime
from worker.settings import Settings


def wait_healthy(
    settings: Settings, timeout: float, not_pid: int | None = None
) -> dict[str, Any] | None:
    """The worker's runtime info once it answers /health (not the process `not_pid`), or None
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = read_runtime(settings)
        if info is not None and info.get("pid") != not_pid:
            try:
                request(settings, "GET", "/health", timeout=1)
                return info
            except (WorkerDown, ApiError):
                pass
        time.sleep(0.05)
    return None


def spawn_detached(settings: Settings, port: int | None = None) -> subprocess.Popen[bytes]:
    """Start `cairn start --foreground` detached from this terminal, logging to worker.log
    (Cairn's own code, even where the current directory has a `worker/` package)."""
    ensure_home(settings.home, settings.logs_dir)
    cmd = module_argv("worker", "start", "--foreground", "--log-file", "--quiet")
    if port is not None:
        cmd += ["--port", str(port)]
    env = child_env(CAIRN_HOME=str(settings.home))
    with open(settings.logs_dir / "worker.stderr.log", "ab", opener=private_opener) as err:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
