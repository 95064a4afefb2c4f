"""Dashboard page latency at scale: a real worker with N observations, pages fetched over HTTP
with the session cookie, like a browser. Prints a table, writes bench/results/dashboard.json."""

from __future__ import annotations

import argparse
import http.client
import os
import re
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import percentile, print_table, write_result  # noqa: E402
from tests.e2e.worker_process import WorkerProcess  # noqa: E402

TYPES = ("file_write", "command", "research", "web", "delegation", "mcp", "note", "other")
AIM_MS = 250.0  # a page should feel instant: p95 under a quarter second at 100k observations


def populate(worker: WorkerProcess, n: int, projects: int) -> None:
    batch = 500
    sessions = max(1, n // 200)
    for s in range(sessions):
        worker.request(
            "POST", "/api/sessions", {"session_id": f"s{s}", "project": f"/repo/p{s % projects}"}
        )
    for start in range(0, n, batch):
        items = [
            {
                "project": f"/repo/p{(i // 200) % projects}",
                "session_id": f"s{(i // 200) % sessions}",
                "type": TYPES[i % len(TYPES)],
                "title": f"step {i}: edited module {i % 97} of the billing service",
                "body": f"details of step {i} " * 5,
                "files": [f"src/mod{i % 97}.py"],
            }
            for i in range(start, min(n, start + batch))
        ]
        status, _ = worker.request(
            "POST", "/api/observations", {"observations": items}, timeout=120
        )
        assert status in (200, 201), status
    for s in range(min(sessions, 500)):
        worker.request("POST", "/api/prompts", {"session_id": f"s{s}", "text": f"prompt {s}"})
    for m in range(300):
        worker.request(
            "POST",
            "/api/memories",
            {"kind": "fact", "content": f"fact number {m} about module {m}", "project": "/repo/p0"},
        )


def login_cookie(worker: WorkerProcess) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", worker.port, timeout=30)
    body = urllib.parse.urlencode({"token": worker.token, "next": "/"})
    conn.request("POST", "/login", body, {"Content-Type": "application/x-www-form-urlencoded"})
    response = conn.getresponse()
    response.read()
    cookie = response.getheader("set-cookie") or ""
    conn.close()
    return cookie.split(";")[0]


def time_page(port: int, cookie: str, path: str, runs: int) -> tuple[list[float], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    samples: list[float] = []
    text = ""
    for _ in range(runs):
        started = time.perf_counter()
        conn.request("GET", path, headers={"Cookie": cookie, "Accept": "text/html"})
        response = conn.getresponse()
        text = response.read().decode()
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, (path, response.status)
    conn.close()
    return samples, text


def live_feed_latency(worker: WorkerProcess, cookie: str, events: int) -> list[float]:
    """Milliseconds from an observation POST to its entry showing in a real browser's feed
    (headless Chromium; skipped without /usr/bin/chromium)."""
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        print("(live feed latency skipped: /usr/bin/chromium is not installed)")
        return []
    from playwright.sync_api import sync_playwright

    name, _, value = cookie.partition("=")
    samples: list[float] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(chromium),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic"],
        )
        context = browser.new_context()
        context.add_cookies([{"name": name, "value": value, "url": worker.url}])
        page = context.new_page()
        page.goto(worker.url + "/?project=%2Frepo%2Flive")
        page.locator("#live-status[data-state='live']").wait_for()
        for i in range(events):
            started = time.perf_counter()
            _, row = worker.request(
                "POST",
                "/api/observations",
                {"project": "/repo/live", "type": "note", "title": f"live {i}"},
            )
            page.locator(f"#observation-{row['id']}").wait_for(timeout=10_000)
            samples.append((time.perf_counter() - started) * 1000)
        browser.close()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="10k observations, 5 runs")
    args = parser.parse_args()
    if args.quick or os.environ.get("CAIRN_BENCH_QUICK") == "1":
        args.observations, args.runs = min(args.observations, 10_000), min(args.runs, 5)
    with tempfile.TemporaryDirectory() as tmp:
        worker = WorkerProcess(home=Path(tmp) / "home", env_extra={"HOME": tmp}).start()
        try:
            started = time.perf_counter()
            populate(worker, args.observations, projects=20)
            fill_s = time.perf_counter() - started
            cookie = login_cookie(worker)
            _, first = time_page(worker.port, cookie, "/", 1)
            deep = re.search(r'hx-get="/feed/items\?([^"]+)"', first)
            pages = {
                "feed": "/",
                "feed, one project": "/?project=%2Frepo%2Fp3",
                "feed, prompts only": "/?type=prompt",
                "feed, older page": "/feed/items?"
                + (deep.group(1).replace("&amp;", "&") if deep else ""),
                "sessions": "/sessions",
                "session detail": "/sessions/s7",
                "memories": "/memories",
                "search (keyword)": "/search?q=billing+module+42&mode=keyword",
                "context preview": "/context?project=%2Frepo%2Fp3",
                "stats": "/stats",
                "settings": "/settings",
            }
            results: dict[str, Any] = {}
            rows = []
            figures = []
            for name, path in pages.items():
                samples, _ = time_page(worker.port, cookie, path, args.runs)
                p50, p95 = statistics.median(samples), percentile(samples, 95)
                results[name] = {"path": path, "p50_ms": round(p50, 2), "p95_ms": round(p95, 2)}
                met = p95 < AIM_MS
                rows.append(
                    (f"{name} p50 / p95 ms", f"{p50:.1f} / {p95:.1f}", f"p95 < {AIM_MS:.0f}", met)
                )
                figures.append(
                    {
                        "figure": f"dashboard {name} p95 ms",
                        "value": round(p95, 1),
                        "aim": f"< {AIM_MS:.0f}",
                        "met": met,
                    }
                )
            live = live_feed_latency(worker, cookie, 20)
            if live:
                p50, p95 = statistics.median(live), percentile(live, 95)
                results["live feed"] = {"p50_ms": round(p50, 1), "p95_ms": round(p95, 1)}
                met = p95 < 1000
                rows.append(
                    (
                        "live feed: POST -> visible p50 / p95 ms",
                        f"{p50:.0f} / {p95:.0f}",
                        "p95 < 1000",
                        met,
                    )
                )
                figures.append(
                    {
                        "figure": "dashboard live feed latency p95 ms",
                        "value": round(p95),
                        "aim": "< 1000",
                        "met": met,
                    }
                )
        finally:
            worker.stop()
    print_table(
        f"Dashboard pages at {args.observations:,} observations ({args.runs} runs each)", rows
    )
    print(f"(populated in {fill_s:.1f} s)")
    write_result(
        "dashboard",
        {
            "observations": args.observations,
            "runs": args.runs,
            "pages": results,
            "figures": figures,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
