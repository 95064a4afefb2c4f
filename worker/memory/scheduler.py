"""The scheduled decay pass (expiry and caps), and observation caps enforced soon after new
observations arrive.

One asyncio task in the worker: the first pass runs `decay_first_run_seconds` after start (never
before /health answers), then every `decay_interval_seconds`. New observations (an item listener)
schedule a cap check at most every `obs_cap_check_seconds`, so a busy session cannot grow a
project past its cap for long. Failures are logged and retried on the next tick.

On a team database every worker runs this service, but the scheduled pass is the team's, not
each worker's: a worker runs it only while it leads the job (`store.leads`, an advisory lock on
PostgreSQL, always on SQLite); when the leader stops, another takes over at its next tick. A cap
check after new observations runs in the worker that received them (it answers that worker's
writes, not the clock), and a pass asked for through the API runs where it was asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Protocol

import anyio.to_thread

from worker.clock import now_ms, to_iso
from worker.memory.decay import DecayPolicy, enforce_caps, run_pass
from worker.settings import Settings
from worker.store.backend import Backend

log = logging.getLogger(__name__)
MIN_INTERVAL = 0.1  # seconds: an interval of 0 must not spin the event loop
JOB = "decay"  # the job a team elects one leader for (store.leads)


class Publisher(Protocol):
    def publish(self, event: str, data: dict[str, Any]) -> Any: ...


class DecayService:
    def __init__(self, settings: Settings, store: Backend, events: Publisher) -> None:
        self.settings = settings
        self.store = store
        self.events = events
        self.policy = DecayPolicy.from_settings(settings)
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._caps_due = False
        self._next_caps = 0.0
        self._next_pass = 0.0
        self.runs = 0
        self.last_run_at: int | None = None
        self.last_result: dict[str, Any] | None = None
        self.last_error: str | None = None
        self.evicted_total = 0
        self.leading: bool | None = None  # the last answer of store.leads (None: not asked yet)

    def start(self) -> None:
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._next_pass = time.monotonic() + self.settings.lifecycle.decay_first_run_seconds
        self._task = asyncio.create_task(self._run(), name="cairn-decay")

    async def stop(self) -> None:
        task = self._task
        self._task = None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def on_items(self, kind: str, ids: list[int]) -> None:
        """Item listener: new observations may push a project over its cap."""
        if kind != "observation" or not ids or self._loop is None or self._wake is None:
            return
        if self._caps_due:
            # A check is already due and the task's timeout includes it: waking the task
            # for every post cost a self-pipe write and a new wait_for each time.
            return
        self._caps_due = True
        wake = self._wake
        with contextlib.suppress(RuntimeError):  # the loop is closing
            self._loop.call_soon_threadsafe(wake.set)

    def record(self, result: dict[str, Any]) -> None:
        """Remember a pass (scheduled or asked for through the API) for status()."""
        self.runs += 1
        self.last_run_at = now_ms()
        self.last_result = {
            k: result[k] for k in ("memories", "observations", "took_ms") if k in result
        }

    def status(self) -> dict[str, Any]:
        wait = max(0.0, self._next_pass - time.monotonic())
        return {
            "running": self._task is not None,
            "interval_seconds": self.settings.lifecycle.decay_interval_seconds,
            "runs": self.runs,
            "last_run_at": to_iso(self.last_run_at),
            "next_run_at": to_iso(now_ms() + int(wait * 1000)) if self._task else None,
            "last_result": self.last_result,
            "last_error": self.last_error,
            "evicted_by_cap_since_start": self.evicted_total,
            "leading": self.leading,
        }

    async def run_now(self) -> dict[str, Any]:
        policy = self.policy
        result = await self.store.write(lambda c: run_pass(c, policy, now_ms()))
        self.record(result)
        self.announce(result)
        return result

    def announce(self, result: dict[str, Any]) -> None:
        """One event per pass that archived anything (counts only: a pass may archive thousands)."""
        memories = result["memories"]["archived"]
        observations = result["observations"]["archived"]
        if memories or observations:
            self.events.publish(
                "decay.completed", {"memories": memories, "observations": observations}
            )

    async def leads(self) -> bool:
        """Whether this worker runs the team's scheduled pass now (asked at each tick)."""
        self.leading = await anyio.to_thread.run_sync(self.store.leads, JOB)
        return self.leading

    async def check_caps(self) -> list[int]:
        policy = self.policy
        evicted = await self.store.write(lambda c: enforce_caps(c, policy, now_ms()))
        if evicted:
            self.evicted_total += len(evicted)
            self.events.publish("decay.completed", {"memories": 0, "observations": len(evicted)})
        return evicted

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            now = time.monotonic()
            timeout = self._next_pass - now
            if self._caps_due:
                timeout = min(timeout, self._next_caps - now)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=max(0.0, timeout))
            self._wake.clear()
            now = time.monotonic()
            try:
                if now >= self._next_pass:
                    self._next_pass = now + max(
                        MIN_INTERVAL, self.settings.lifecycle.decay_interval_seconds
                    )
                    self._caps_due = False  # the pass enforces the caps too
                    if await self.leads():
                        await self.run_now()
                    self.last_error = None
                elif self._caps_due and now >= self._next_caps:
                    self._caps_due = False
                    self._next_caps = now + self.settings.lifecycle.obs_cap_check_seconds
                    await self.check_caps()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a busy or closing database must not kill the schedule
                log.exception("decay pass failed; retrying at the next tick")
                self.last_error = str(exc)
