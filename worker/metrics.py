"""GET /metrics: what the worker did, in Prometheus' text format (version 0.0.4), behind the token.

Counters and histograms are kept in one `Metrics` object made by create_app (no module state):
the middleware counts every request by route template, method and status, and times it; the
context builder's callers add what they injected. Gauges are read at scrape time from the
services and the store (spool backlog, embedding queue, database size, items). Label values
are route templates (`/api/memories/{id}`), never raw paths, so the series stay few.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Seconds: a hook's budget is ~1 s, a search ~10-50 ms, a cold model start seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# What a hook request is, by the route it calls (User-Agent: cairn-hook).
HOOK_EVENTS = {
    "/api/sessions": "session_start",
    "/api/prompts": "prompt",
    "/api/observations": "observation",
    "/api/sessions/{session_id:path}/summarize": "stop",
    "/api/sessions/{session_id:path}/checkpoint": "compact",
    "/api/sessions/{session_id:path}/end": "session_end",
    "/api/sessions/{session_id:path}/plan": "plan",
    "/api/context": "context",
    "/api/spool/events": "spool",
}


@dataclass
class Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(BUCKETS, value)] += 1
        self.total += value


@dataclass
class Metrics:
    """The worker's counters and histograms (thread-safe: the embedder and requests share it)."""

    requests: dict[tuple[str, str, str], int] = field(default_factory=dict)
    durations: dict[str, Histogram] = field(default_factory=dict)
    hook_events: dict[str, int] = field(default_factory=dict)
    context_seconds: dict[str, Histogram] = field(default_factory=dict)
    injected_tokens: dict[str, int] = field(default_factory=dict)
    injections: dict[str, int] = field(default_factory=dict)
    silences: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def request(self, method: str, route: str, status: int, seconds: float, hook: bool) -> None:
        with self._lock:
            key = (method, route, str(status))
            self.requests[key] = self.requests.get(key, 0) + 1
            self.durations.setdefault(route, Histogram()).observe(seconds)
            if hook:
                event = HOOK_EVENTS.get(route, "other")
                self.hook_events[event] = self.hook_events.get(event, 0) + 1

    def context(self, kind: str, seconds: float, tokens: int) -> None:
        """One context built: `kind` is prompt or session_start; 0 tokens is a silence."""
        with self._lock:
            self.context_seconds.setdefault(kind, Histogram()).observe(seconds)
            if tokens > 0:
                self.injected_tokens[kind] = self.injected_tokens.get(kind, 0) + tokens
                self.injections[kind] = self.injections.get(kind, 0) + 1
            elif kind == "prompt":
                self.silences += 1

    def render(self, gauges: Iterable[tuple[str, str, float]]) -> str:
        """The exposition text: counters, histograms, then the gauges given (name, help, value)."""
        out: list[str] = []
        with self._lock:
            _family(out, "cairn_http_requests_total", "counter", "HTTP requests answered")
            for (method, route, status), n in sorted(self.requests.items()):
                labels = _labels(method=method, route=route, status=status)
                out.append(f"cairn_http_requests_total{labels} {n}")
            _histograms(
                out,
                "cairn_http_request_duration_seconds",
                "Time to answer a request, by route",
                "route",
                self.durations,
            )
            _counters(
                out,
                "cairn_hook_events_total",
                "Requests from the hooks, by event",
                "event",
                self.hook_events,
            )
            _histograms(
                out,
                "cairn_context_build_seconds",
                "Time to build an injected context (search and judgment included)",
                "kind",
                self.context_seconds,
            )
            _counters(
                out,
                "cairn_injected_tokens_total",
                "Tokens of context injected",
                "kind",
                self.injected_tokens,
            )
            _counters(
                out,
                "cairn_injections_total",
                "Contexts that injected something",
                "kind",
                self.injections,
            )
            _family(
                out, "cairn_prompt_silences_total", "counter", "Prompts given nothing (refused)"
            )
            out.append(f"cairn_prompt_silences_total {self.silences}")
        for name, help_text, value in gauges:
            _family(out, name, "gauge", help_text)
            out.append(f"{name} {_number(value)}")
        return "\n".join(out) + "\n"


def _family(out: list[str], name: str, kind: str, help_text: str) -> None:
    out.append(f"# HELP {name} {help_text}")
    out.append(f"# TYPE {name} {kind}")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**values: str) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in values.items()) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def _counters(
    out: list[str], name: str, help_text: str, label: str, series: dict[str, int]
) -> None:
    _family(out, name, "counter", help_text)
    for key, n in sorted(series.items()):
        out.append(f"{name}{_labels(**{label: key})} {n}")


def _histograms(
    out: list[str], name: str, help_text: str, label: str, series: dict[str, Histogram]
) -> None:
    _family(out, name, "histogram", help_text)
    for key, hist in sorted(series.items()):
        running = 0
        for bound, count in zip((*BUCKETS, math.inf), hist.counts, strict=True):
            running += count
            le = "+Inf" if math.isinf(bound) else repr(bound)
            out.append(f"{name}_bucket{_labels(**{label: key, 'le': le})} {running}")
        out.append(f"{name}_sum{_labels(**{label: key})} {_number(hist.total)}")
        out.append(f"{name}_count{_labels(**{label: key})} {running}")


class MetricsMiddleware:
    """Counts and times every HTTP request by its route template (unmatched: `other`)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = scope.get("route")
            template = str(getattr(route, "path", "")) or "other"
            hook = (b"user-agent", b"cairn-hook") in (scope.get("headers") or [])
            self.metrics.request(
                str(scope.get("method", "")),
                template,
                status[0],
                time.perf_counter() - started,
                hook,
            )
