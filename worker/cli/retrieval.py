"""cairn search | reindex: search from the terminal; rebuild every vector with a progress bar."""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.parse
from typing import Any, TextIO

from worker.client import ApiError, WorkerDown, request
from worker.project_identity import project_argument
from worker.settings import load_settings
from worker.team import database_url


def cmd_search(args: argparse.Namespace) -> int:
    settings = load_settings()
    params: dict[str, Any] = {"q": args.query, "mode": args.mode, "limit": args.limit}
    if args.project:
        # A checkout's path (or `.`) keyed as the hooks key it: by the team database they read.
        params["project"] = project_argument(args.project, bool(database_url(settings.home)))
    if args.kind:
        params["kind"] = args.kind
    if args.explain:
        params["explain"] = "true"
    try:
        result = request(settings, "GET", "/api/search?" + urllib.parse.urlencode(params))
    except (WorkerDown, ApiError) as exc:
        print(f"cairn search: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    hits = result.get("hits") or []
    if not hits:
        print("nothing relevant found" + (" (refused)" if result.get("refused") else ""))
        return 0
    for hit in hits:
        when = (hit.get("created_at") or "")[:16].replace("T", " ")
        print(
            f"{hit['kind']} #{hit['id']}  {when}  {hit.get('type') or ''}  score {hit['score']:.3f}"
        )
        print(f"  {hit['title']}")
        snippet = hit.get("snippet") or ""
        if snippet and snippet != hit["title"]:
            print(f"  {snippet}")
        if args.explain and hit.get("signals"):
            parts = ", ".join(f"{k} {v:+.3f}" for k, v in hit["signals"].items())
            print(f"  signals: {parts}")
    print(f"({len(hits)} hits, mode {result.get('mode')}, embeddings {result.get('embeddings')})")
    return 0


def progress_bar(fraction: float, width: int = 30) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "[" + "#" * filled + "-" * (width - filled) + f"] {fraction * 100:5.1f}%"


def _show(stats: dict[str, Any], out: TextIO) -> None:
    line = (
        f"\r{progress_bar(float(stats.get('coverage') or 0))} "
        f"{stats.get('embedded', 0)}/{stats.get('items', 0)} items  {stats.get('status')}"
    )
    rate = stats.get("items_per_second")
    if rate:
        line += f"  {rate:.0f} items/s"
    out.write(line.ljust(90))
    out.flush()


def cmd_reindex(args: argparse.Namespace) -> int:
    settings = load_settings()
    out = sys.stderr
    try:
        stats = request(settings, "POST", "/api/embeddings/reindex")
        print(f"re-embedding every item with {stats.get('model')}", file=out)
        if args.no_wait:
            return 0
        deadline = time.monotonic() + args.timeout
        while True:
            _show(stats, out)
            if stats.get("status") in ("unavailable", "disabled"):
                out.write("\n")
                print(
                    f"cairn reindex: embeddings are {stats.get('status')}: "
                    f"{stats.get('error') or 'set CAIRN_EMBED_ENABLED=1'}",
                    file=out,
                )
                return 1
            if stats.get("coverage", 0) >= 1.0 and stats.get("status") == "ready":
                out.write("\n")
                print("done", file=out)
                return 0
            if time.monotonic() > deadline:
                out.write("\n")
                print("cairn reindex: still running in the worker (timed out waiting)", file=out)
                return 1
            time.sleep(0.5)
            stats = request(settings, "GET", "/api/embeddings/stats")
    except (WorkerDown, ApiError) as exc:
        print(f"cairn reindex: {exc}", file=out)
        return 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("search", help="search memories, observations, prompts and summaries")
    p.add_argument("query", help="what to look for (plain words; code identifiers work)")
    p.add_argument("--project", help="project key, or a checkout path or . (its key); default: all")
    p.add_argument("--mode", choices=("hybrid", "keyword", "semantic"), default="hybrid")
    p.add_argument("--kind", help="comma-separated: observation,memory,prompt,summary")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--explain", action="store_true", help="show each ranking signal")
    p.add_argument("--json", action="store_true", help="print the worker's answer as JSON")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("reindex", help="re-embed every item (after changing the model)")
    p.add_argument("--no-wait", action="store_true", help="start it and return at once")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait at most")
    p.set_defaults(func=cmd_reindex)
