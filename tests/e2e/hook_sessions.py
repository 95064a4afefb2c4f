"""Simulated Claude Code sessions driving the REAL hook script (one process per event, real-shaped
JSON on stdin), for the fault, load and security tests and bench/load.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.worker_process import WorkerProcess
from worker.paths import hook_script

MARKER = "cairn-evt"


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env["CAIRN_HOME"] = str(home)
    env.update(extra)
    return env


@dataclass
class HookRun:
    event: str
    exit_code: int
    seconds: float
    stdout: str
    stderr: str


def run_hook(
    event: str, payload: dict[str, Any], env: dict[str, str], timeout: float = 30
) -> HookRun:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(hook_script()), event],
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
        timeout=timeout,
    )
    return HookRun(
        event,
        proc.returncode,
        time.perf_counter() - t0,
        proc.stdout.decode(errors="replace"),
        proc.stderr.decode(errors="replace"),
    )


def marker(session_id: str, i: int) -> str:
    return f"{MARKER}-{session_id}-{i}"


def tool_payload(session_id: str, cwd: Path, i: int) -> dict[str, Any]:
    """A PostToolUse for `Bash` as Claude Code sends it; the command carries a unique marker."""
    return {
        "session_id": session_id,
        "transcript_path": str(cwd / ".transcript.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": f"echo {marker(session_id, i)}", "description": "step"},
        "tool_response": {
            "stdout": f"{marker(session_id, i)}\n",
            "stderr": "",
            "interrupted": False,
            "exit_code": 0,
        },
        "tool_use_id": f"toolu_{session_id}_{i:06d}",
    }


def start_payload(session_id: str, cwd: Path) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": str(cwd / ".transcript.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }


@dataclass
class Session:
    """One simulated agent session: SessionStart, then `events` PostToolUse hooks in order."""

    session_id: str
    cwd: Path
    events: int
    env: dict[str, str]
    runs: list[HookRun] = field(default_factory=list)
    between: Callable[[], None] | None = None
    # Seconds one hook process may take before it counts as hung (subprocess.TimeoutExpired).
    timeout: float = 30

    def run(self) -> None:
        start = start_payload(self.session_id, self.cwd)
        self.runs.append(run_hook("session-start", start, self.env, self.timeout))
        for i in range(self.events):
            payload = tool_payload(self.session_id, self.cwd, i)
            self.runs.append(run_hook("post-tool-use", payload, self.env, self.timeout))
            if self.between is not None:
                self.between()

    @property
    def markers(self) -> set[str]:
        return {marker(self.session_id, i) for i in range(self.events)}


def make_project(root: Path) -> Path:
    project = root / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    return project


def observations_of(worker: WorkerProcess, session_id: str) -> Iterator[dict[str, Any]]:
    cursor: str | None = None
    while True:
        path = f"/api/observations?session_id={session_id}&limit=500&include_archived=true"
        if cursor:
            path += f"&cursor={cursor}"
        status, body = worker.request("GET", path, timeout=60)
        assert status == 200, body
        yield from body["items"]
        cursor = body.get("next_cursor")
        if not cursor:
            return


def marker_counts(worker: WorkerProcess, session_id: str) -> dict[str, int]:
    """How many stored observations carry each event marker (exactly once = 1 each)."""
    counts: dict[str, int] = {}
    for item in observations_of(worker, session_id):
        text = f"{item['title']}\n{item['body']}"
        found = {word for word in text.split() if word.startswith(f"{MARKER}-{session_id}-")}
        for word in found:
            counts[word] = counts.get(word, 0) + 1
    return counts


def drain_spool(worker: WorkerProcess, rounds: int = 60) -> dict[str, Any]:
    """Replay the spool until it is empty; returns the last replay answer."""
    last: dict[str, Any] = {}
    for _ in range(rounds):
        status, body = worker.request("POST", "/api/spool/replay", {}, timeout=120)
        assert status == 200, body
        last = body
        if body["backlog"]["events"] == 0:
            return last
        time.sleep(0.2)
    raise AssertionError(f"spool never drained: {last}")
