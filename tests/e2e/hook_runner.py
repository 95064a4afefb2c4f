"""Run the real hook script as Claude Code does: a fresh process, JSON on stdin, an event argument."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hook_modules import HOOK_SCRIPT

HANG_GUARD = 60  # seconds; only to turn a hang into a failure, never a speed assertion


@dataclass
class HookResult:
    returncode: int
    stdout: str
    stderr: str

    def context(self) -> dict[str, Any] | None:
        """The parsed hook output, or None when the hook printed nothing."""
        if not self.stdout.strip():
            return None
        return dict(json.loads(self.stdout))


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env["CAIRN_HOME"] = str(home)
    env["CAIRN_EMBED_ENABLED"] = "0"
    env.update(extra)
    return env


def run_hook(
    event: str, payload: dict[str, Any] | bytes, env: dict[str, str], cwd: Path | None = None
) -> HookResult:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    proc = subprocess.run(
        [sys.executable, str(HOOK_SCRIPT), event],
        input=data,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=HANG_GUARD,
    )
    return HookResult(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def base(session: str, cwd: Path, event: str, transcript: Path | None = None) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(transcript or cwd / ".transcript.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": event,
        "permission_mode": "default",
    }


def tool_payload(
    session: str, cwd: Path, tool: str, tool_input: Any, response: Any, use_id: str
) -> dict[str, Any]:
    return {
        **base(session, cwd, "PostToolUse"),
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
        "tool_use_id": use_id,
    }


def wait_for(predicate: Any, timeout: float = HANG_GUARD, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached before the hang guard")
        time.sleep(interval)


def pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True


def stop_spawned_worker(home: Path) -> None:
    """Stop a worker a hook started (not our child): by the PID in worker.json / spawn.json."""
    pids: set[int] = set()
    for name in ("worker.json", "spawn.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            pids.add(int(json.loads((home / name).read_text())["pid"]))
    for pid in pids:
        if pid > 0 and pid_running(pid):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for pid in pids:
        while pid > 0 and pid_running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid > 0 and pid_running(pid):
            os.kill(pid, signal.SIGKILL)
