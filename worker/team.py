"""Team memory settings: the team database URL, which is only ever shown redacted.

The URL comes from CAIRN_DATABASE_URL, else "database_url" in `CAIRN_HOME/config.json` (the
file the hooks read too): with it the worker stores memory in that PostgreSQL database
(docs/team.md), and the hooks key projects by their git remote (worker/project_identity.py).
A worker that cannot use it (no driver, the server unreachable) does not start rather than keep
a local database no teammate sees; the hooks spool their events until one can.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from worker.errors import ConfigError

ENV = "CAIRN_DATABASE_URL"
CONFIG_KEY = "database_url"
MASK = "***"
# `password=...` in a URL's query or a key=value connection string (quoted or bare).
_PASSWORD_PARAM = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)")


def database_url(home: Path, env: Mapping[str, str] | None = None) -> str:
    """The team database URL ('' when none is configured)."""
    env = os.environ if env is None else env
    value = env.get(ENV, "").strip()
    if value:
        return value
    try:
        config = json.loads((home / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    found = config.get(CONFIG_KEY) if isinstance(config, dict) else None
    return found.strip() if isinstance(found, str) else ""


def redact(url: str) -> str:
    """The URL with its password masked (userinfo and `password=` parameters)."""
    scheme, sep, rest = url.partition("://")
    if sep:
        end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
        netloc, tail = rest[:end], rest[end:]
        # The last `@` ends the userinfo (an unencoded `@` in a password is read as part of it).
        at = netloc.rfind("@")
        if at >= 0:
            user, colon, _password = netloc[:at].partition(":")
            netloc = user + (":" + MASK if colon else "") + netloc[at:]
        url = scheme + sep + netloc + tail
    return _PASSWORD_PARAM.sub(lambda m: m.group(1) + MASK, url)


def password_of(url: str) -> str:
    """The password a connection string carries ('' if none or unreadable)."""
    try:
        import psycopg.conninfo
    except ImportError:  # no driver (the `team` extra): a URL's userinfo is all there is
        from urllib.parse import unquote, urlsplit

        try:
            return unquote(urlsplit(url).password or "")
        except ValueError:
            return ""
    try:
        return str(psycopg.conninfo.conninfo_to_dict(url).get("password") or "")
    except psycopg.Error:
        return ""


def safe_message(text: str, url: str) -> str:
    """`text` with the connection string shown redacted and its password masked anywhere."""
    text = text.replace(url, redact(url))
    password = password_of(url)
    return text.replace(password, MASK) if password else text


def url_source(home: Path, env: Mapping[str, str] | None = None) -> str:
    """Where the team database URL in use is set: the variable, or the config file's key."""
    if (os.environ if env is None else env).get(ENV, "").strip():
        return ENV
    return f'"{CONFIG_KEY}" in {home / "config.json"}'


def check_team_database(home: Path, env: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError when a team database is configured but this installation cannot reach
    PostgreSQL at all (the `team` extra's driver is missing), naming where the URL is set."""
    url = database_url(home, env)
    if not url:
        return
    import importlib.util

    if importlib.util.find_spec("psycopg") is not None:
        return
    source = url_source(home, env)
    raise ConfigError(
        f"a team database is configured ({source}: {redact(url)}), but the PostgreSQL driver "
        'is not installed: pip install -e ".[team]" (or remove the setting to use the local '
        "database); hooks spool their events meanwhile"
    )
