"""The SSE broadcaster alone: formatting, ring buffer, Last-Event-ID resume, caps, slow clients."""

from __future__ import annotations

import asyncio
import json

import pytest

from worker.errors import ServiceUnavailable
from worker.events import Broadcaster, Event, format_event


def drain(b: Broadcaster, last_id: str | None, n: int) -> list[dict[str, str]]:
    """Open a stream, publish nothing more, and take the first n messages."""

    async def main() -> list[dict[str, str]]:
        queue = b.subscribe()
        stream = b.stream(queue, last_id)
        out = [await stream.__anext__() for _ in range(n)]
        await stream.aclose()
        return out

    return asyncio.run(main())


def test_format_event_is_pure_json() -> None:
    event = Event(id="1-2", event="memory.created", data={"id": 7, "content": "é\nx"})
    out = format_event(event)
    assert out["id"] == "1-2" and out["event"] == "memory.created"
    assert json.loads(out["data"]) == {"id": 7, "content": "é\nx"}
    assert "\n" not in out["data"]  # one SSE data line


def test_resume_sends_exactly_the_missed_events_in_order() -> None:
    b = Broadcaster(buffer_size=100, max_clients=4)
    ids = [b.publish("observation.created", {"id": i}).id for i in range(10)]
    got = drain(b, ids[3], 6)
    assert [m["id"] for m in got] == ids[4:]
    assert [json.loads(m["data"])["id"] for m in got] == list(range(4, 10))
    assert b.client_count == 0  # closing the stream unsubscribes


def test_resume_from_an_earlier_run_starts_with_a_reset() -> None:
    b = Broadcaster(buffer_size=100, max_clients=4)
    for i in range(3):
        b.publish("observation.created", {"id": i})
    got = drain(b, "123-9", 4)
    assert got[0]["event"] == "stream.reset"
    assert [json.loads(m["data"])["id"] for m in got[1:]] == [0, 1, 2]


def test_resume_older_than_the_ring_buffer_says_events_were_missed() -> None:
    b = Broadcaster(buffer_size=5, max_clients=4)
    ids = [b.publish("observation.created", {"id": i}).id for i in range(20)]
    got = drain(b, ids[2], 6)
    assert got[0]["event"] == "stream.reset" and "missed" in got[0]["data"]
    assert [m["id"] for m in got[1:]] == ids[15:]


def test_resume_from_the_latest_id_sends_nothing_old() -> None:
    b = Broadcaster(buffer_size=5, max_clients=4)
    ids = [b.publish("observation.created", {"id": i}).id for i in range(3)]
    assert b.backlog(ids[-1]) == []
    assert b.backlog(None) == []


def test_live_events_follow_the_backlog_without_duplicates() -> None:
    b = Broadcaster(buffer_size=100, max_clients=4)
    first = b.publish("observation.created", {"id": 0}).id

    async def main() -> list[str]:
        queue = b.subscribe()
        # Published after subscribe() but before the stream starts: in the buffer AND the queue.
        b.publish("observation.created", {"id": 1})
        stream = b.stream(queue, first)
        out = [(await stream.__anext__())["data"]]
        b.publish("observation.created", {"id": 2})
        out.append((await stream.__anext__())["data"])
        await stream.aclose()
        return out

    assert [json.loads(d)["id"] for d in asyncio.run(main())] == [1, 2]


def test_client_cap_refuses_with_503() -> None:
    b = Broadcaster(buffer_size=10, max_clients=2)

    async def main() -> None:
        b.subscribe()
        b.subscribe()
        with pytest.raises(ServiceUnavailable, match="limit 2"):
            b.subscribe()

    asyncio.run(main())


def test_a_client_too_slow_to_keep_up_is_cut_off_not_the_worker() -> None:
    b = Broadcaster(buffer_size=10, max_clients=2, client_queue=3)

    async def main() -> list[object]:
        queue = b.subscribe()
        for i in range(10):
            b.publish("observation.created", {"id": i})
        items = []
        while not queue.empty():
            items.append(queue.get_nowait())
        return items

    items = asyncio.run(main())
    assert items == [None]  # the stream ends; the client reconnects with Last-Event-ID
    assert b.dropped_clients == 1 and b.client_count == 0


def test_close_ends_every_stream() -> None:
    b = Broadcaster(buffer_size=10, max_clients=2)

    async def main() -> list[dict[str, str]]:
        queue = b.subscribe()
        stream = b.stream(queue, None)
        b.close()
        return [m async for m in stream]

    assert asyncio.run(main()) == []
