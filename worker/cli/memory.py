"""`cairn decay` and `cairn compress`: run the lifecycle passes on the running worker."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from worker.client import ApiError, WorkerDown, request
from worker.project_identity import project_argument
from worker.settings import load_settings
from worker.team import database_url


def _call(path: str, body: dict[str, Any]) -> dict[str, Any] | None:
    settings = load_settings()
    if body.get("project"):
        body["project"] = project_argument(body["project"], bool(database_url(settings.home)))
    try:
        result = request(settings, "POST", path, body, timeout=300.0)
    except (WorkerDown, ApiError) as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return None
    return dict(result)


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"dry_run": bool(args.dry_run)}
    if args.project:
        body["project"] = args.project
    return body


def cmd_decay(args: argparse.Namespace) -> int:
    result = _call("/api/decay/run", _body(args))
    if result is None:
        return 1
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    verb = "would archive" if result["dry_run"] else "archived"
    mem, obs = result["memories"], result["observations"]
    print(
        f"{verb} {mem['archived']} of {mem['scanned']} memories (expired) and "
        f"{obs['archived']} of {obs['scanned']} observations (over the cap of "
        f"{result['observation_cap']} per project) in {result['took_ms']} ms"
    )
    return 0


def cmd_compress(args: argparse.Namespace) -> int:
    body = _body(args)
    if args.global_scope:
        body["scope"] = "global"
    result = _call("/api/compress", body)
    if result is None:
        return 1
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    verb = "would merge" if result["dry_run"] else "merged"
    print(
        f"{verb} {result['merged']} near-duplicate memories and found {result['superseded']} "
        f"superseded among {result['scanned']} (method: {result['method']})"
    )
    if result.get("note"):
        print(f"note: {result['note']}")
    for merge in result["merges"]:
        extra = f" (+ {merge['appended']!r})" if merge["appended"] else ""
        print(f"  #{merge['archive_id']} -> #{merge['keep_id']} {merge['similarity']:.2f}{extra}")
    for item in result["supersessions"]:
        print(f"  #{item['old_id']} superseded by #{item['new_id']}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "decay",
        help="archive expired memories and observations over the cap now (the worker also does it)",
    )
    p.add_argument("--project", help="only this project (its key, or a checkout path or .)")
    p.add_argument("--dry-run", action="store_true", help="only report what would be archived")
    p.add_argument("--json", action="store_true", help="print the worker's answer as JSON")
    p.set_defaults(func=cmd_decay)

    p = sub.add_parser("compress", help="merge near-duplicate memories (keeps the important one)")
    p.add_argument(
        "--project", help="only this project (its key, or a checkout path or .; default: all)"
    )
    p.add_argument(
        "--global", dest="global_scope", action="store_true", help="only the global memories"
    )
    p.add_argument("--dry-run", action="store_true", help="only report the merges")
    p.add_argument("--json", action="store_true", help="print the worker's answer as JSON")
    p.set_defaults(func=cmd_compress)
