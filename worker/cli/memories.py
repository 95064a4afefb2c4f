"""`cairn memory add | list | show | edit | forget`: explicit memories from the terminal.

Each command is one call to the running worker's memories API, so a memory saved here is
validated, scored, merged and superseded exactly as one saved over REST, MCP or the dashboard.
A memory belongs to the project of the current directory unless `--project` or `--global` says
otherwise (the key the hooks give a checkout: its git root, or its remote on a team database).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from typing import Any

from worker.client import ApiError, WorkerDown, request
from worker.project_identity import project_argument
from worker.settings import Settings, load_settings
from worker.store.memories import KINDS
from worker.team import database_url


def _project(settings: Settings, given: str) -> str:
    return project_argument(given, bool(database_url(settings.home)))


def _call(name: str, method: str, path: str, body: Any = None) -> Any:
    settings = load_settings()
    try:
        return request(settings, method, path, body)
    except (WorkerDown, ApiError) as exc:
        print(f"cairn memory {name}: {exc}", file=sys.stderr)
        return None


def _line(memory: dict[str, Any]) -> str:
    pin = " pinned" if memory.get("pinned") else ""
    where = "global" if memory.get("scope") == "global" else str(memory.get("project") or "")
    first = " ".join(str(memory.get("content") or "").split())
    first = first if len(first) <= 100 else first[:99] + "…"
    return f"#{memory['id']}  {memory['kind']}  {memory['importance']}/5{pin}  {where}\n  {first}"


def _print(memory: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(memory, indent=2, ensure_ascii=False))
        return
    print(_line(memory))


def cmd_add(args: argparse.Namespace) -> int:
    settings = load_settings()
    body: dict[str, Any] = {"content": args.text}
    if args.global_scope:
        body["scope"] = "global"
    else:
        body["project"] = _project(settings, args.project or ".")
    if args.kind:
        body["kind"] = args.kind
    if args.importance is not None:
        body["importance"] = args.importance
    if args.tag:
        body["tags"] = args.tag
    if args.pin:
        body["pinned"] = True
    saved = _call("add", "POST", "/api/memories", body)
    if saved is None:
        return 1
    if args.json:
        _print(saved, True)
        return 0
    verb = "saved" if saved.get("created") else "merged into"
    print(f"{verb} memory #{saved['id']} ({saved['kind']}, importance {saved['importance']})")
    for old in saved.get("supersedes") or []:
        print(f"  supersedes #{old}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    settings = load_settings()
    params: dict[str, Any] = {"limit": args.limit}
    if args.global_scope:
        params["scope"] = "global"
    elif not args.all:
        params["project"] = _project(settings, args.project or ".")
    if args.kind:
        params["kind"] = args.kind
    if args.archived:
        params["archived"] = "true"
    page = _call("list", "GET", "/api/memories?" + urllib.parse.urlencode(params))
    if page is None:
        return 1
    items = page.get("items") or []
    if args.json:
        print(json.dumps(items, indent=2, ensure_ascii=False))
        return 0
    if not items:
        print("no memories" + ("" if args.all else " here (--all lists every project's)"))
    for memory in items:
        print(_line(memory))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    memory = _call("show", "GET", f"/api/memories/{args.id}")
    if memory is None:
        return 1
    if args.json:
        _print(memory, True)
        return 0
    print(_line(memory).split("\n", 1)[0])
    print(memory["content"])
    if memory.get("tags"):
        print("tags: " + ", ".join(memory["tags"]))
    print(f"created {memory['created_at']}, by {memory.get('author') or 'unknown'}")
    if memory.get("superseded_by"):
        print(f"superseded by #{memory['superseded_by']}")
    if memory.get("archived"):
        print(f"archived: {memory.get('archive_reason') or 'yes'}")
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {}
    if args.text is not None:
        body["content"] = args.text
    if args.kind:
        body["kind"] = args.kind
    if args.importance is not None:
        body["importance"] = args.importance
    if args.tag is not None:
        body["tags"] = args.tag
    if args.pin or args.unpin:
        body["pinned"] = bool(args.pin)
    if not body:
        print("cairn memory edit: nothing to change (give --text, --kind, ...)", file=sys.stderr)
        return 2
    memory = _call("edit", "PATCH", f"/api/memories/{args.id}", body)
    if memory is None:
        return 1
    _print(memory, args.json)
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    if not args.yes:
        if not sys.stdin.isatty():
            print("cairn memory forget: deleting needs --yes (no terminal to ask)", file=sys.stderr)
            return 2
        answer = input(f"Forget memory #{args.id} for good? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("kept")
            return 0
    if _call("forget", "DELETE", f"/api/memories/{args.id}") is None:
        return 1
    print(f"forgot memory #{args.id}")
    return 0


def _importance(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 5:
        raise argparse.ArgumentTypeError("importance is 1..5")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("memory", help="add, list, show, edit or forget explicit memories")
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")
    kinds = {"choices": KINDS, "help": "default: inferred from the text"}

    p = verbs.add_parser("add", help="save a memory (for this directory's project by default)")
    p.add_argument("text", help="what agents should keep knowing")
    p.add_argument("--kind", **kinds)  # type: ignore[arg-type]
    where = p.add_mutually_exclusive_group()
    where.add_argument("--project", help="project key, or a checkout path (default: .)")
    where.add_argument("--global", dest="global_scope", action="store_true", help="every project")
    p.add_argument("--importance", type=_importance, help="1..5 (default: scored from the text)")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--pin", action="store_true", help="always in the session-start context")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_add)

    p = verbs.add_parser("list", help="this project's memories, newest first")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--project", help="project key, or a checkout path (default: .)")
    where.add_argument("--global", dest="global_scope", action="store_true", help="global only")
    where.add_argument("--all", action="store_true", help="every project's and the global ones")
    p.add_argument("--kind", choices=KINDS)
    p.add_argument("--archived", action="store_true", help="the archived ones instead")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = verbs.add_parser("show", help="one memory, whole")
    p.add_argument("id", type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = verbs.add_parser("edit", help="change a memory's text, kind, importance, tags or pin")
    p.add_argument("id", type=int)
    p.add_argument("--text")
    p.add_argument("--kind", choices=KINDS)
    p.add_argument("--importance", type=_importance)
    p.add_argument("--tag", action="append", help="the tags, replacing the old ones")
    pin = p.add_mutually_exclusive_group()
    pin.add_argument("--pin", action="store_true")
    pin.add_argument("--unpin", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_edit)

    p = verbs.add_parser("forget", help="delete a memory for good (archive it from the dashboard)")
    p.add_argument("id", type=int)
    p.add_argument("--yes", action="store_true", help="without asking")
    p.set_defaults(func=cmd_forget)
