"""GET /metrics: Prometheus text behind the token, counting what the worker really answered."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from worker.metrics import BUCKETS, Metrics

pytestmark = pytest.mark.both_backends

SAMPLE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_]+="([^"\\]|\\.)*",?)*\})? (-?[0-9.]+(e[+-]?[0-9]+)?|\+Inf)$'
)


def samples(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [a-z_]+ ", line), line
            continue
        assert SAMPLE.match(line), f"not a Prometheus sample: {line!r}"
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


@pytest.mark.sqlite_only("the exposition format alone: no database")
def test_counters_histograms_and_labels_render_as_prometheus_text() -> None:
    m = Metrics()
    m.request("GET", "/api/search", 200, 0.02, False)
    m.request("GET", "/api/search", 200, 3.0, False)
    m.request("POST", '/odd"route\\', 400, 0.001, True)
    m.context("prompt", 0.03, 120)
    m.context("prompt", 0.01, 0)
    got = samples(m.render([("cairn_things", "Things", 3.0)]))
    assert got['cairn_http_requests_total{method="GET",route="/api/search",status="200"}'] == 2
    assert (
        got['cairn_http_requests_total{method="POST",route="/odd\\"route\\\\",status="400"}'] == 1
    )
    bucket = 'cairn_http_request_duration_seconds_bucket{route="/api/search",le="%s"}'
    assert got[bucket % "0.025"] == 1 and got[bucket % "2.5"] == 1 and got[bucket % "5.0"] == 2
    assert got[bucket % "+Inf"] == 2 and len(BUCKETS) == 11
    assert got['cairn_http_request_duration_seconds_sum{route="/api/search"}'] == 3.02
    assert got['cairn_hook_events_total{event="other"}'] == 1
    assert got['cairn_injected_tokens_total{kind="prompt"}'] == 120
    assert got["cairn_prompt_silences_total"] == 1
    assert got['cairn_context_build_seconds_count{kind="prompt"}'] == 2
    assert got["cairn_things"] == 3


def test_metrics_need_the_token(anon_client: TestClient) -> None:
    refused = anon_client.get("/metrics")
    assert refused.status_code == 401


def test_metrics_count_what_the_worker_answered(client: TestClient) -> None:
    hook = {"User-Agent": "cairn-hook"}
    obs = {"project": "/p/app", "session_id": "s1", "type": "command", "title": "Run: make"}
    made = client.post("/api/observations", json={"observations": [obs]}, headers=hook)
    assert made.status_code in (200, 201), made.text
    client.get("/api/context", params={"project": "/p/app", "query": "make"})
    client.get("/api/context", params={"project": "/p/app"})
    assert client.get("/api/memories/999999").status_code == 404
    page = client.get("/metrics")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = samples(page.text)
    status = str(made.status_code)
    assert (
        got[
            f'cairn_http_requests_total{{method="POST",route="/api/observations",status="{status}"}}'
        ]
        == 1
    )
    assert (
        got['cairn_http_requests_total{method="GET",route="/api/memories/{id:int}",status="404"}']
        == 1
    )
    assert got['cairn_hook_events_total{event="observation"}'] == 1
    assert got['cairn_context_build_seconds_count{kind="prompt"}'] == 1
    assert got['cairn_context_build_seconds_count{kind="session_start"}'] == 1
    assert got["cairn_database_up"] == 1 and got["cairn_database_size_bytes"] > 0
    assert got["cairn_observations"] == 1 and "cairn_embed_queue_depth" in got
    assert "cairn_spool_waiting_events" in got
