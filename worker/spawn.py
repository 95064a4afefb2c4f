"""Start the worker in the background and wait until it answers (for `cairn start`, `cairn
open`, `cairn install`, `cairn import` and the MCP server, which starts a worker that is down).

A child that exits before it answers (a team database it cannot reach: uvicorn's exit code 3)
is noticed at once, and its reason read back from the log it wrote it to: tracebacks and
uvicorn's messages go to worker.stderr.log, the worker's own lines to worker.log.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from worker.client import ApiError, WorkerDown, request
from worker.home import ensure_home, private_opener
from worker.launch import child_env, module_argv
from worker.runtime import read_runtime
from worker.settings import Settings
from worker.team import database_url, safe_message

STDERR_LOG = "worker.stderr.log"
WORKER_LOG = "worker.log"
REASON_LINES = 5  # the last lines of the log a failed start prints
REASON_LINE_CHARS = 500
REASON_READ_BYTES = 64 * 1024
# Traceback scaffolding: the lines that say where, not why.
_SCAFFOLD = (
    "Traceback (most recent call last)",
    "During handling of the above exception",
    "The above exception was the direct cause",
)


class StartFailed(Exception):
    """The worker started in the background did not come up: why, and which log says more."""


def wait_healthy(
    settings: Settings,
    timeout: float,
    not_pid: int | None = None,
    child: subprocess.Popen[bytes] | None = None,
) -> dict[str, Any] | None:
    """The worker's runtime info once it answers /health (not the process `not_pid`), or None
    after `timeout` seconds, or as soon as `child` exits with an error (exit 0 is a child that
    found a worker already starting: that one is waited for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = read_runtime(settings)
        if info is not None and info.get("pid") != not_pid:
            try:
                request(settings, "GET", "/health", timeout=1)
                return info
            except (WorkerDown, ApiError):
                pass
        if child is not None and child.poll() not in (None, 0):
            return None
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
    with open(settings.logs_dir / STDERR_LOG, "ab", opener=private_opener) as err:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            env=env,
            close_fds=True,
        )


def start_worker(settings: Settings, timeout: float, port: int | None = None) -> dict[str, Any]:
    """Start the worker in the background; its runtime info once it answers. Raises StartFailed
    as soon as the child exits with an error (saying its exit code and the last lines of the
    log holding its reason, credentials masked), or after `timeout` seconds."""
    logs = [settings.logs_dir / STDERR_LOG, settings.logs_dir / WORKER_LOG]
    offsets = {path: _size(path) for path in logs}
    child = spawn_detached(settings, port)
    info = wait_healthy(settings, timeout, child=child)
    if info is not None:
        return info
    code = child.poll()
    if code is None or code == 0:
        raise StartFailed(
            f"the worker did not answer within {timeout:.0f}s"
            + (f" (pid {child.pid} is still starting)" if code is None else "")
            + f"; see {logs[0]} and {logs[1]}"
        )
    url = database_url(settings.home)
    for path in logs:  # the first log the child wrote to holds its reason
        lines = reason_lines(_written_since(path, offsets[path]))
        if lines:
            text = "\n".join(lines)
            text = safe_message(text, url) if url else text
            shown = "".join(f"\n  {line}" for line in text.splitlines())
            raise StartFailed(
                f"the worker exited with code {code} before answering:{shown}\nsee {path}"
            )
    raise StartFailed(f"the worker exited with code {code} before answering; see {logs[0]}")


def reason_lines(text: str) -> list[str]:
    """The last lines of a log excerpt that say why, without the traceback's frames."""
    kept = [
        line.rstrip()[:REASON_LINE_CHARS]
        for line in text.splitlines()
        if line.strip() and not line.startswith("  ") and not any(s in line for s in _SCAFFOLD)
    ]
    return kept[-REASON_LINES:]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _written_since(path: Path, offset: int) -> str:
    """What was appended to `path` after it was `offset` bytes long (all of it if rotated)."""
    size = _size(path)
    start = offset if size >= offset else 0
    start = max(start, size - REASON_READ_BYTES)
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
