"""start | stop | status | token: running the worker process."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

from worker.client import ApiError, WorkerDown, request
from worker.paths import cairn_command
from worker.runtime import AlreadyRunning, pid_alive, read_runtime
from worker.settings import Settings, load_settings
from worker.spawn import StartFailed, start_worker
from worker.team import check_team_database


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(port=getattr(args, "port", None))


def cmd_start(args: argparse.Namespace) -> int:
    settings = _settings(args)
    check_team_database(settings.home)  # said here, not only in the detached worker's log
    if args.foreground:
        from worker.server import serve

        try:
            return serve(settings, log_to_file=args.log_file, announce=not args.quiet)
        except AlreadyRunning as exc:
            _report_running(exc.info)
            return 0
    info = read_runtime(settings)
    if info is not None:
        _report_running(info)
        return 0
    try:
        info = start_worker(settings, args.wait, args.port)
    except StartFailed as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    print(f"Cairn worker started: pid {info['pid']}, http://127.0.0.1:{info['port']}")
    print(f"  token file: {settings.token_path}   log: {settings.logs_dir / 'worker.log'}")
    print(f"  open the dashboard with: {cairn_command()} open")
    return 0


def _report_running(info: dict[str, Any] | None) -> None:
    if info:
        print(f"Cairn worker already running: pid {info['pid']}, http://127.0.0.1:{info['port']}")
    else:
        print("Cairn worker already running for this home (starting up)")


def cmd_stop(args: argparse.Namespace) -> int:
    settings = _settings(args)
    info = read_runtime(settings)
    if info is None:
        print("Cairn worker is not running")
        return 0
    pid = int(info["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        if not pid_alive(pid) or read_runtime(settings) is None:
            print(f"Cairn worker stopped (pid {pid})")
            return 0
        time.sleep(0.05)
    print(f"cairn: pid {pid} did not stop within {args.wait:.0f}s", file=sys.stderr)
    return 1


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{n} B"


def human_seconds(seconds: float) -> str:
    """3600.0 -> "1 h", 90 -> "90 s", 600 -> "10 min": a duration as people say it."""
    for unit, size in (("d", 86_400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} s"


def field_text(name: str, value: Any) -> str:
    """One status field for people: `running` rather than `running True`, `every 1 h` rather
    than `interval_seconds 3600.0`, words rather than snake_case."""
    words = name.replace("_", " ")
    if isinstance(value, bool):
        return words if value else f"not {words}"
    if isinstance(value, dict | list):
        return f"{words} {json.dumps(value)}"
    if name == "interval_seconds" and isinstance(value, int | float):
        return f"every {human_seconds(float(value))}"
    if name.endswith("_seconds") and isinstance(value, int | float):
        return f"{words.removesuffix(' seconds')} {human_seconds(float(value))}"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{words} {value}"


def fields_line(values: dict[str, Any]) -> str:
    """`name value, ...` for people: fields that are not set (None) left out (field_text)."""
    return ", ".join(field_text(name, value) for name, value in values.items() if value is not None)


def cmd_status(args: argparse.Namespace) -> int:
    settings = _settings(args)
    try:
        data = request(settings, "GET", "/api/status", timeout=5)
    except WorkerDown as exc:
        if args.json:
            print(json.dumps({"running": False, "message": str(exc)}))
        else:
            print(f"Cairn worker is not running ({settings.home})")
        return 1
    except ApiError as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    # Running but unable to store (its team database unreachable): exit 1, saying why.
    database = data.get("database") or {}
    reachable = database.get("reachable", True) is not False
    if args.json:
        print(json.dumps({"running": True, **data}, indent=2))
        return 0 if reachable else 1
    print(
        f"Cairn {data['version']}: running, pid {data['pid']}, port {data['port']}, "
        f"up {data['uptime_seconds']:.0f}s"
    )
    if reachable:
        print("  " + fields_line(data.get("counts") or {}))
        print(f"  database {data['db_path']} ({human_bytes(int(data['db_size_bytes']))})")
    else:
        print(f"  DATABASE UNREACHABLE: {database.get('error') or data['db_path']}")
        spool = (data.get("services") or {}).get("spool") or {}
        waiting = spool.get("waiting_events", "?")
        print(f"  nothing is stored meanwhile: hooks spool their events ({waiting} waiting)")
    if data.get("recovered_from"):
        print(f"  WARNING: a corrupt database was moved aside to {data['recovered_from']}")
    for name, service in (data.get("services") or {}).items():
        if service:
            print(f"  {name}: " + fields_line(service))
    return 0 if reachable else 1


def cmd_token(args: argparse.Namespace) -> int:
    settings = _settings(args)
    from worker.auth import TokenKeeper  # starlette types, hashing: only for this command

    keeper = TokenKeeper(settings.token_path)
    keeper.ensure()
    if args.rotate:
        keeper.rotate()
        print(
            f"New token written to {settings.token_path} (old token and dashboard logins revoked)"
        )
    print(keeper.current())
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("start", help="start the worker (background by default)")
    p.add_argument("--foreground", action="store_true", help="run in this terminal")
    p.add_argument("--port", type=int, help="port (default 37800 or CAIRN_PORT)")
    p.add_argument("--wait", type=float, default=20.0, help=argparse.SUPPRESS)
    p.add_argument("--log-file", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_start)

    p = sub.add_parser("stop", help="stop the worker")
    p.add_argument("--wait", type=float, default=15.0, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_stop)

    p = sub.add_parser("status", help="pid, port, uptime, counts, database size")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("token", help="print the API token (--rotate for a new one)")
    p.add_argument("--rotate", action="store_true", help="replace the token; old one stops working")
    p.set_defaults(func=cmd_token)
