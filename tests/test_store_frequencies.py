"""FrequencyCache: document frequencies reused while the index barely changes."""

from __future__ import annotations

from starlette.testclient import TestClient

from worker.store.frequencies import FrequencyCache


class Counter:
    def __init__(self, frequencies: dict[str, int]) -> None:
        self.frequencies = frequencies
        self.asked: list[list[str]] = []

    def __call__(self, terms: list[str]) -> dict[str, int]:
        self.asked.append(list(terms))
        return {t: self.frequencies.get(t, 0) for t in terms}


def test_a_count_is_reused_while_the_index_stays_within_one_percent() -> None:
    cache, count = FrequencyCache(), Counter({"deploy": 40, "nginx": 3})
    assert cache.lookup(["deploy", "nginx"], 10_000, count) == {"deploy": 40, "nginx": 3}
    count.frequencies["deploy"] = 41
    assert cache.lookup(["nginx", "deploy"], 10_100, count) == {"deploy": 40, "nginx": 3}
    assert count.asked == [["deploy", "nginx"]]
    # Past 1% more (or fewer) rows, the index has changed enough to count again.
    assert cache.lookup(["deploy"], 10_200, count) == {"deploy": 41}
    assert cache.lookup(["deploy"], 9_899, count) == {"deploy": 41}
    assert count.asked[1:] == [["deploy"], ["deploy"]]


def test_a_small_index_is_recounted_after_any_write() -> None:
    cache, count = FrequencyCache(), Counter({"deploy": 2})
    cache.lookup(["deploy"], 50, count)
    cache.lookup(["deploy"], 51, count)
    assert len(count.asked) == 2


def test_zero_is_never_reused_and_old_counts_expire() -> None:
    cache, count = FrequencyCache(), Counter({})
    assert cache.lookup(["fresh"], 10_000, count) == {"fresh": 0}
    count.frequencies["fresh"] = 1
    assert cache.lookup(["fresh"], 10_000, count) == {"fresh": 1}
    stale = FrequencyCache(max_age_s=0.0)
    stale.lookup(["fresh"], 10_000, count)
    stale.lookup(["fresh"], 10_000, count)
    assert count.asked[-2:] == [["fresh"], ["fresh"]]


def test_the_cache_is_bounded() -> None:
    cache, count = FrequencyCache(max_terms=3), Counter({t: 1 for t in "abcde"})
    cache.lookup(["a", "b", "c"], 1000, count)
    cache.lookup(["d", "e"], 1000, count)  # over the bound: starts again with these
    cache.lookup(["a", "d"], 1000, count)
    assert count.asked[-1] == ["a"]


def test_a_word_just_written_is_found_by_the_next_search(client: TestClient) -> None:
    """150 items: one more is within the 1% a count is reused for, so only "0 is never
    reused" makes the new word count."""
    project = "/repo/freq"
    base = [{"type": "note", "title": f"note {i}", "body": "ordinary text"} for i in range(150)]
    assert (
        client.post(
            "/api/observations",
            json={"observations": [{"project": project, **item} for item in base]},
        ).status_code
        == 201
    )
    for _ in range(2):
        resp = client.get("/api/search", params={"q": "zanzibar", "project": project})
        assert resp.status_code == 200 and resp.json()["hits"] == []
    created = client.post(
        "/api/observations",
        json={"project": project, "type": "note", "title": "trip", "body": "zanzibar ferry"},
    ).json()
    hits = client.get("/api/search", params={"q": "zanzibar", "project": project}).json()["hits"]
    assert hits and hits[0]["id"] == created["id"]
