"""`cairn team join|leave|status`: point this machine's worker at a team's PostgreSQL database.

`join` checks the database before it keeps anything: it connects, migrates the schema (under
an advisory lock: any number of teammates may join at once) and says how vectors will be
searched; only then is the URL written to `CAIRN_HOME/config.json` (mode 0600, other keys
kept). The URL is read from the argument, or from standard input with `-` (so it stays out of
the shell history and the process list). It is never printed whole: the password is masked.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from worker.errors import ConfigError
from worker.settings import load_settings

SCHEMES = ("postgresql://", "postgres://")


class Unusable(Exception):
    """The team database cannot be used (unreachable, refused, a newer schema...)."""


def _config_path(home: Path) -> Path:
    return home / "config.json"


def _read_config(path: Path) -> dict[str, Any]:
    """config.json as a dict ({} when missing); a file that is not a JSON object is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object; fix or remove it")
    return data


def _write_config(path: Path, data: dict[str, Any]) -> None:
    from worker.home import ensure_private_dir, private_temp

    ensure_private_dir(path.parent)
    with private_temp(path) as handle:
        handle.write(json.dumps(data, indent=2) + "\n")


def _url_argument(value: str) -> str:
    url = (sys.stdin.readline() if value == "-" else value).strip()
    if not url.startswith(SCHEMES):
        raise ConfigError(
            "a team database is a PostgreSQL URL, e.g. "
            "postgresql://user@db.example.com:5432/cairn?sslmode=verify-full"
        )
    return url


def _check(url: str) -> dict[str, Any]:
    """Open the database as the worker will (connect, migrate, vectors); what it found."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise Unusable('the PostgreSQL driver is missing: pip install -e ".[team]"') from None
    from worker.store.errors import StoreError
    from worker.store.pg import PgStore

    store = PgStore(url)
    try:
        store.open()
        return {
            "where": store.where,
            "vector_search": store.vector_search,
            "migrated": store.migrations_applied,
        }
    except (StoreError, RuntimeError) as exc:
        raise Unusable(f"cannot use the team database: {exc}") from None
    finally:
        store.close()


def cmd_join(args: argparse.Namespace) -> int:
    from worker.team import CONFIG_KEY, ENV, redact

    settings = load_settings()
    url = _url_argument(args.url)
    path = _config_path(settings.home)
    config = _read_config(path)
    try:
        found = _check(url)
    except Unusable as exc:
        print(f"cairn: {exc} (nothing was saved)", file=sys.stderr)
        return 1
    config[CONFIG_KEY] = url
    _write_config(path, config)
    print(f"joined the team database {found['where']}")
    if found["migrated"]:
        print(f"  schema: applied migrations {', '.join(map(str, found['migrated']))}")
    print(f"  vectors: {found['vector_search']}")
    print(f"  saved in {path} (mode 0600)")
    import os

    if os.environ.get(ENV, "").strip() and os.environ[ENV].strip() != url:
        print(f"  note: {ENV} is set ({redact(os.environ[ENV])}) and wins over the saved URL")
    print("restart the worker to use it: cairn stop && cairn start")
    return 0


def cmd_leave(args: argparse.Namespace) -> int:
    from worker.team import CONFIG_KEY, redact

    settings = load_settings()
    path = _config_path(settings.home)
    config = _read_config(path)
    if CONFIG_KEY not in config:
        print("no team database is saved in " + str(path))
        return 0
    old = str(config.pop(CONFIG_KEY))
    _write_config(path, config)
    print(
        f"left the team database {redact(old)}; the worker uses the local database once restarted"
    )
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from worker.team import ENV, database_url

    settings = load_settings()
    url = database_url(settings.home)
    if not url:
        print("no team database: memory stays in the local database")
        return 0
    import os

    source = ENV if os.environ.get(ENV, "").strip() else str(_config_path(settings.home))
    try:
        found = _check(url)
    except Unusable as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    print(f"team database {found['where']} (from {source})")
    print(f"  vectors: {found['vector_search']}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    team = sub.add_parser("team", help="share one project memory with a team (PostgreSQL)")
    actions = team.add_subparsers(dest="team_command", required=True, metavar="ACTION")
    join = actions.add_parser("join", help="check a team database and make this worker use it")
    join.add_argument("url", help="postgresql://user@host:5432/db?sslmode=... ('-': read stdin)")
    join.set_defaults(func=cmd_join)
    leave = actions.add_parser("leave", help="go back to the local database")
    leave.set_defaults(func=cmd_leave)
    status = actions.add_parser("status", help="the team database in use, checked")
    status.set_defaults(func=cmd_status)
