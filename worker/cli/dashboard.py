"""`cairn open`: a one-time dashboard login link, printed and opened in the browser."""

from __future__ import annotations

import argparse
import sys

from worker.client import ApiError, WorkerDown, request
from worker.settings import Settings, load_settings
from worker.spawn import StartFailed, start_worker

PAGES = ("feed", "search", "sessions", "memories", "context", "stats", "settings")


def _ensure_worker(settings: Settings, wait: float) -> None:
    """Start the worker in the background if it is not running (StartFailed: it did not)."""
    try:
        request(settings, "GET", "/health", timeout=2)
        return
    except (WorkerDown, ApiError):
        pass
    print("cairn: the worker is not running; starting it…", file=sys.stderr)
    start_worker(settings, wait)


def cmd_open(args: argparse.Namespace) -> int:
    import webbrowser  # ~20 ms: only when a browser is opened

    settings = load_settings()
    try:
        _ensure_worker(settings, args.wait)
    except StartFailed as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    target = "/" if args.page in (None, "feed") else f"/{args.page}"
    try:
        link = request(settings, "POST", "/api/login-links", {"next": target})
    except (WorkerDown, ApiError) as exc:
        print(f"cairn: could not create a login link: {exc}", file=sys.stderr)
        return 1
    url = str(link["url"])
    print(f"Dashboard login link (one use, expires in {link['expires_in_seconds']} s):")
    print(f"  {url}")
    if not args.no_browser:
        opened = False
        try:
            opened = webbrowser.open(url)
        except webbrowser.Error:
            opened = False
        if not opened:
            print("cairn: no browser could be opened here; paste the link into one.")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("open", help="open the dashboard (prints a one-time login link)")
    p.add_argument("page", nargs="?", choices=PAGES, help="page to open (default: feed)")
    p.add_argument("--no-browser", action="store_true", help="only print the link")
    p.add_argument("--wait", type=float, default=20.0, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_open)
