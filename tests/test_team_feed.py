"""The live feed across workers (worker/team_feed.py): two feeds on one real PostgreSQL database
relay each other's shared events through LISTEN/NOTIFY, and never a private one."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from worker.events import Broadcaster, Event
from worker.team_feed import MAX_PAYLOAD, TeamFeed, is_shared, payload


def _feed(url: str) -> TeamFeed:
    return TeamFeed(url, Broadcaster(buffer_size=100, max_clients=5))


async def _next(queue: asyncio.Queue[Event | None], timeout: float = 10.0) -> Event:
    item = await asyncio.wait_for(queue.get(), timeout)
    assert item is not None
    return item


async def _connected(*feeds: TeamFeed, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not all(f.connected for f in feeds):
        assert loop.time() < deadline, [f.status() for f in feeds]
        await asyncio.sleep(0.05)


@pytest.mark.postgres
def test_shared_events_reach_the_other_worker_and_private_ones_do_not(pg_url: str) -> None:
    async def run() -> None:
        a, b = _feed(pg_url), _feed(pg_url)
        a.start()
        b.start()
        try:
            await _connected(a, b)
            seen_by_b = b.subscribe()
            seen_by_a = a.subscribe()
            a.publish("prompt.created", {"id": 1, "text": "half a thought", "shared": 0})
            a.publish("memory.created", {"id": 7, "body": "Use pnpm, not npm", "author": "ann"})
            got = await _next(seen_by_b)
            # The private prompt came first on A and never reached B: B's first event is the memory.
            assert (got.event, got.data["id"], got.data["author"]) == ("memory.created", 7, "ann")
            b.publish("observation.created", {"id": 3, "title": "pytest ran", "shared": 1})
            got_a = [await _next(seen_by_a) for _ in range(3)]
            # A sees its own two events once each (not echoed back) and B's shared observation.
            assert [e.event for e in got_a] == [
                "prompt.created",
                "memory.created",
                "observation.created",
            ]
            assert b.status()["received"] == 1 and a.status()["received"] == 1
            assert a.status()["sent"] == 1  # the private prompt was never sent
        finally:
            await a.stop()
            await b.stop()

    asyncio.run(run())


def test_the_privacy_rule_of_the_feed() -> None:
    assert is_shared("memory.updated", {})
    assert is_shared("summary.created", {}) and is_shared("checkpoint.created", {})
    assert not is_shared("prompt.created", {"shared": 0})
    assert not is_shared("observation.created", {})
    assert is_shared("observation.created", {"shared": 1})
    assert not is_shared("decay.completed", {})  # each worker's own housekeeping


def test_a_long_row_is_shortened_to_fit_a_notification() -> None:
    data: dict[str, Any] = {"id": 1, "body": "x" * 20_000, "title": "t"}
    text = payload("o", "memory.created", data)
    assert text is not None and len(text.encode()) <= MAX_PAYLOAD
    sent = json.loads(text)["data"]
    assert sent["truncated"] is True and sent["body"].startswith("xxx") and len(sent["body"]) < 1000
    assert payload("o", "memory.created", {"id": 1, "tags": ["y" * 9000]}) is None


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_database_never_blocks_publishing_and_hides_the_password() -> None:
    async def run() -> None:
        url = f"postgresql://ann:s3cret@127.0.0.1:{_closed_port()}/team"
        feed = _feed(url)
        feed.start()
        try:
            local = feed.subscribe()
            feed.publish("memory.created", {"id": 1, "body": "kept locally"})
            assert (await _next(local)).data["id"] == 1  # the local dashboard still gets it
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while not feed.status()["last_error"]:
                assert loop.time() < deadline
                await asyncio.sleep(0.05)
            status = feed.status()
            assert status["connected"] is False and status["sent"] == 0
            assert "s3cret" not in json.dumps(status) and "***" in status["database"]
        finally:
            await feed.stop()

    asyncio.run(run())
