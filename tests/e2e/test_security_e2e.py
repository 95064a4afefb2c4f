"""A real worker: the token (old and new) never appears in logs, error bodies, pages, the
spool, runtime files or an export; the home, token and logs are private to the user. On both
backends: over a team database, whose URL carries a password, that password never appears either,
and the hooks' session is stored in that database."""

from __future__ import annotations

import os
import stat
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.backends import process_store, value
from tests.e2e.hook_sessions import Session, hook_env, make_project
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

# The test server trusts loopback, so a URL with any password connects.
DATABASE_PASSWORD = "pg-secret-5d81c3"

PAGES = [
    "/",
    "/search?q=token",
    "/sessions",
    "/timeline",
    "/memories",
    "/context",
    "/stats",
    "/settings",
    "/login",
]


def everything_written_under(home: Path) -> dict[str, bytes]:
    out = {}
    for path in home.rglob("*"):
        if path.is_file() and path.name != "token" and not path.name.startswith("cairn.db"):
            out[str(path)] = path.read_bytes()
    return out


def team_env_with_password() -> dict[str, str]:
    """The test's team database with a password in its URL (nothing on the sqlite backend)."""
    url = os.environ.get("CAIRN_DATABASE_URL", "")
    if not url:
        return {}
    with_password = url.replace("://postgres@", f"://postgres:{DATABASE_PASSWORD}@", 1)
    assert DATABASE_PASSWORD in with_password, url
    return {"CAIRN_DATABASE_URL": with_password}


def test_token_never_leaks_and_files_are_private(isolated_home: Path, backend: str) -> None:
    env_extra = {"CAIRN_RATE_LIMIT_LOGIN": "3/minute", **team_env_with_password()}
    worker = WorkerProcess(home=isolated_home, env_extra=env_extra).start()
    seen: list[str] = []
    try:
        token = worker.token
        assert stat.S_IMODE((isolated_home / "token").stat().st_mode) == 0o600
        assert stat.S_IMODE(isolated_home.stat().st_mode) == 0o700

        near_miss = token[:-2] + ("xx" if not token.endswith("xx") else "yy")
        for tok in (near_miss, "", token + "x"):
            status, body = worker.request("GET", "/api/status", token=tok or "none")
            assert status == 401
            seen.append(str(body))
        seen.append(str(worker.request("POST", "/api/observations", {"bad": True})[1]))
        seen.append(str(worker.request("GET", "/api/observations/999999")[1]))
        pages = {p: worker.request_text("GET", p, headers={"Accept": "text/html"}) for p in PAGES}
        seen.extend(pages.values())
        if backend == "postgres":  # the settings page names the database, its password masked
            assert "postgresql://postgres:***@127.0.0.1:" in pages["/settings"]
        # A failed and a successful form login, and the rate limiter refusing the rest.
        for candidate in (near_miss, token, near_miss, near_miss, near_miss):
            form = urllib.parse.urlencode({"token": candidate}).encode()
            req = urllib.request.Request(worker.url + "/login", data=form, method="POST")
            req.add_header("Content-Type", "application/x-www-form-urlencoded")
            req.add_header("Origin", worker.url)
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    seen.append(resp.read().decode(errors="replace"))
                    seen.append(str(resp.headers))
            except urllib.error.HTTPError as exc:
                seen.append(exc.read().decode(errors="replace"))
                seen.append(str(exc.headers))
        # Hooks read the token; a session's worth of them runs.
        Session("leak", make_project(isolated_home.parent), 3, hook_env(isolated_home)).run()
        with process_store(worker.env()) as store:  # the worker's own database: file or team
            assert store.backend == backend
            assert (
                value(store, "SELECT COUNT(*) FROM observations WHERE session_id = ?", ["leak"])
                == 3
            )
        export = worker.request_text("GET", "/api/export")
        assert '"table"' in export
        seen.append(export)

        rotated = worker.cli("token", "--rotate").stdout.strip().splitlines()[-1]
        assert worker.request("GET", "/api/status", token=token)[0] == 401
        seen.append(str(worker.request("GET", "/api/status", token=rotated)[1]))
    finally:
        worker.stop()

    files = everything_written_under(isolated_home)
    files[str(worker.log_path)] = worker.log_path.read_bytes()
    assert b"worker starting" in files[str(worker.log_path)]  # the worker's log is inspected
    secrets = [token, rotated] + ([DATABASE_PASSWORD] if backend == "postgres" else [])
    for secret in secrets:
        for name, data in files.items():
            assert secret.encode() not in data, f"secret leaked into {name}"
        for text in seen:
            assert secret not in text, f"secret leaked into an answer: {text[:200]}"
    logs = isolated_home / "logs"
    if logs.exists():
        assert stat.S_IMODE(logs.stat().st_mode) & 0o077 == 0
