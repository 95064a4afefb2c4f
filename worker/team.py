"""Team memory settings: the team database URL, which is only ever shown redacted.

The URL comes from CAIRN_DATABASE_URL, else "database_url" in `CAIRN_HOME/config.json` (the
file the hooks read too). This version cannot store memory in PostgreSQL yet (README, "Team
memory (in progress)"): with a URL set the worker refuses to start, rather than keep a local
database that no teammate sees, and the hooks spool their events (already keyed by remote,
worker/project_identity.py) until a worker that can use it replays them.
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


def refuse_team_database(home: Path, env: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError when a team database is configured: this version cannot use it."""
    url = database_url(home, env)
    if not url:
        return
    source = (
        ENV
        if (os.environ if env is None else env).get(ENV, "").strip()
        else (f'"{CONFIG_KEY}" in {home / "config.json"}')
    )
    message = (
        f"a team database is configured ({source}: {redact(url)}), but this version of Cairn "
        "cannot store memory in PostgreSQL yet (team memory is in progress: see the README). "
        f"Remove {source} to keep using the local database; hooks spool their events meanwhile."
    )
    raise ConfigError(message)
