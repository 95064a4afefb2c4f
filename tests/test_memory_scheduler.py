"""The decay scheduler: new observations schedule one cap check, not one each; on a team
database only the leading worker runs the scheduled pass."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from worker.events import Broadcaster
from worker.memory.scheduler import DecayService
from worker.settings import load_settings
from worker.store import Store
from worker.store.pg import PgStore


def run_with_service(tmp_path: Path, body: Any, **overrides: Any) -> Any:
    settings = load_settings(decay_first_run_seconds=3600.0, **overrides)
    store = Store(tmp_path / "cairn.db")
    store.open()
    events = Broadcaster(buffer_size=10, max_clients=1)

    async def main() -> Any:
        service = DecayService(settings, store, events)
        service.start()
        try:
            return await body(service)
        finally:
            await service.stop()

    try:
        return asyncio.run(main())
    finally:
        store.close()


def test_a_burst_of_new_observations_wakes_the_scheduler_once(tmp_path: Path) -> None:
    async def body(service: DecayService) -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        wakes = 0
        real = loop.call_soon_threadsafe

        def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal wakes
            if getattr(callback, "__self__", None) is service._wake:
                wakes += 1
            return real(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        try:
            await asyncio.sleep(0.05)  # the task is waiting for its first pass (an hour away)
            for i in range(50):
                service.on_items("observation", [i + 1])
            burst = wakes
            # The due check runs (cap check interval 0.2 s), then a new post schedules another.
            for _ in range(100):
                await asyncio.sleep(0.01)
                if not service._caps_due:
                    break
            service.on_items("observation", [99])
            service.on_items("observation", [100])
            return burst, wakes
        finally:
            loop.call_soon_threadsafe = real  # type: ignore[method-assign]

    burst, total = run_with_service(tmp_path, body, obs_cap_check_seconds=0.2)
    assert burst == 1
    assert total == 2


def test_other_kinds_and_empty_lists_do_not_schedule_a_check(tmp_path: Path) -> None:
    async def body(service: DecayService) -> bool:
        service.on_items("memory", [1, 2])
        service.on_items("observation", [])
        return service._caps_due

    assert run_with_service(tmp_path, body) is False


@pytest.mark.postgres
def test_two_workers_on_one_team_database_run_the_scheduled_pass_once(pg_url: str) -> None:
    """Only the leader runs the pass; when it stops, the other worker takes over."""
    settings = load_settings(decay_first_run_seconds=0.0, decay_interval_seconds=0.1)
    stores = [PgStore(pg_url), PgStore(pg_url)]
    for store in stores:
        store.open()
    events = Broadcaster(buffer_size=10, max_clients=1)

    async def until(check: Any) -> bool:
        for _ in range(200):
            if check():
                return True
            await asyncio.sleep(0.05)
        return bool(check())

    async def main() -> None:
        services = [DecayService(settings, store, events) for store in stores]
        for service in services:
            service.start()
        try:
            assert await until(lambda: max(s.runs for s in services) >= 3)
            leader, other = sorted(services, key=lambda s: -s.runs)
            assert other.runs == 0 and other.status()["leading"] is False
            assert leader.status()["leading"] is True and leader.last_error is None
            await leader.stop()
            leader.store.close()
            assert await until(lambda: other.runs >= 2)
            assert other.status()["leading"] is True and other.last_error is None
        finally:
            for service in services:
                await service.stop()

    try:
        asyncio.run(main())
    finally:
        for store in stores:
            store.close()


def test_a_worker_on_sqlite_leads_its_own_passes(tmp_path: Path) -> None:
    async def body(service: DecayService) -> tuple[bool, Any]:
        return await service.leads(), service.status()["leading"]

    assert run_with_service(tmp_path, body) == (True, True)
