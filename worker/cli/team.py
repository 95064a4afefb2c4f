"""`cairn team join|leave|status|push`: point this machine's worker at a team's PostgreSQL
database, and copy this machine's local history into it.

`join` checks the database before it keeps anything: it connects, migrates the schema (under
an advisory lock: any number of teammates may join at once) and says how vectors will be
searched; only then is the URL written to `CAIRN_HOME/config.json` (mode 0600, other keys
kept). The URL is read from the argument, or from standard input with `-` (so it stays out of
the shell history and the process list). It is never printed whole: the password is masked.

`cairn team push` reads the local database file (CAIRN_HOME) and writes the team database the
worker would use (CAIRN_DATABASE_URL, else "database_url" in config.json: worker/team.py); what
it copies and how it maps is worker/ops/team_push.py. The URL is shown only redacted.
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


def check_database(url: str) -> dict[str, Any]:
    """Open the database as the worker will (connect, migrate, vectors); what it found (also
    `cairn doctor`'s team check: both say what the worker will do, not what the server has)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise Unusable('the PostgreSQL driver is missing: pip install -e ".[team]"') from None
    from worker.store.errors import StoreError
    from worker.store.pg import PgStore

    store = PgStore(url)
    try:
        store.open()
        version = store.read_sync(lambda db: db.execute("SHOW server_version").fetchone())
        return {
            "where": store.where,
            "server": str(version[0]) if version else "?",
            "native_vectors": store.native_vectors,
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
        found = check_database(url)
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
    from worker.team import database_url, url_source

    settings = load_settings()
    url = database_url(settings.home)
    if not url:
        print("no team database: memory stays in the local database")
        return 0
    source = url_source(settings.home)
    try:
        found = check_database(url)
    except Unusable as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    print(f"team database {found['where']} (from {source})")
    print(f"  vectors: {found['vector_search']}")
    return 0


def _fail(message: str) -> int:
    # One line: database errors span several (psycopg's hints, a DETAIL line).
    print("cairn: team push failed: " + "; ".join(message.split("\n")).replace("\t", " "),
          file=sys.stderr)  # fmt: skip
    return 1


def cmd_push(args: argparse.Namespace) -> int:
    from worker.cli.portability import ProgressBar, project_option
    from worker.errors import ConfigError
    from worker.ops.team_push import Push, PushOptions
    from worker.project_identity import author as git_author
    from worker.store import Store
    from worker.store.errors import StoreError
    from worker.store.pg import PgStore
    from worker.team import ENV, database_url

    settings = load_settings()
    url = database_url(settings.home)
    if not url:
        return _fail(
            f'no team database is configured: set {ENV}, or "database_url" in '
            f"{settings.home / 'config.json'}"
        )
    if not settings.db_path.exists():
        return _fail(f"no local database at {settings.db_path} (nothing recorded to push)")
    options = PushOptions(
        prompts=args.prompts or args.all,
        observations=args.observations or args.all,
        share=args.share,
        author=settings.author or git_author(None),
        # The local database's keys: a checkout's path is its repository root, never a remote.
        projects=tuple(
            key for text in args.project or [] if (key := project_option(text, team=False))
        ),
    )
    local = Store(settings.db_path, busy_timeout_ms=settings.database.busy_timeout_ms)
    team = PgStore(url)
    bar = ProgressBar("push", enabled=not args.quiet)
    try:
        local.open()
        team.open()
        result = Push(local.read_sync, team.write_sync, options, bar).run()
    except (StoreError, ConfigError) as exc:
        bar.finish()
        return _fail(getattr(exc, "message", str(exc)))
    except RuntimeError as exc:  # a query the database refused (PgStore: password masked)
        bar.finish()
        return _fail(str(exc))
    finally:
        team.close()
        local.close()
    bar.finish()
    out = sys.stderr
    for local_key, team_key in result.projects.items():
        if local_key != team_key:
            print(f"project {local_key} -> {team_key}", file=out)
    for table, counts in result.tables.items():
        extra = f", {counts['shared']} now shared" if counts["shared"] else ""
        print(
            f"{table}: {counts['copied']} copied, {counts['present']} already there{extra}",
            file=out,
        )
    left = [name for name, on in (("prompts", options.prompts),
            ("observations", options.observations)) if not on]  # fmt: skip
    if left:
        print(f"not pushed: {' and '.join(left)} (--all, or --{left[0]}, pushes them)", file=out)
    print(f"pushed to {team.where}: {result.copied} rows copied", file=out)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "team", help="share one project memory with a team (PostgreSQL): join, leave, status, push"
    )
    team = p.add_subparsers(dest="team_command", required=True, metavar="COMMAND")
    register_membership(team)
    register_push(team)


def register_push(team: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = team.add_parser(
        "push",
        help="copy the local history into the team database (memories, summaries and "
        "checkpoints; prompts and observations with a flag); pushing again copies nothing new",
    )
    p.add_argument("--prompts", action="store_true", help="push prompts too (private)")
    p.add_argument(
        "--observations", action="store_true", help="push tool observations too (private)"
    )
    p.add_argument("--all", action="store_true", help="--prompts and --observations")
    p.add_argument(
        "--share",
        action="store_true",
        help="share the pushed prompts and observations with the team (default: private to "
        "their author)",
    )
    p.add_argument(
        "--project",
        action="append",
        help="push only this project (its local key or checkout path; repeatable; default: "
        "every project recorded here)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_push)


def register_membership(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    join = actions.add_parser("join", help="check a team database and make this worker use it")
    join.add_argument("url", help="postgresql://user@host:5432/db?sslmode=... ('-': read stdin)")
    join.set_defaults(func=cmd_join)
    leave = actions.add_parser("leave", help="go back to the local database")
    leave.set_defaults(func=cmd_leave)
    status = actions.add_parser("status", help="the team database in use, checked")
    status.set_defaults(func=cmd_status)
