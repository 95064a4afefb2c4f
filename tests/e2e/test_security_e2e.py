"""A real worker: the token (old and new) never appears in logs, error bodies, pages, the
spool, runtime files or an export; the home, token and logs are private to the user."""

from __future__ import annotations

import stat
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.hook_sessions import Session, hook_env, make_project
from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e

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


def test_token_never_leaks_and_files_are_private(isolated_home: Path) -> None:
    worker = WorkerProcess(
        home=isolated_home, env_extra={"CAIRN_RATE_LIMIT_LOGIN": "3/minute"}
    ).start()
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
        for page in PAGES:
            seen.append(worker.request_text("GET", page, headers={"Accept": "text/html"}))
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
    for secret in (token, rotated):
        for name, data in files.items():
            assert secret.encode() not in data, f"token leaked into {name}"
        for text in seen:
            assert secret not in text, f"token leaked into an answer: {text[:200]}"
    logs = isolated_home / "logs"
    if logs.exists():
        assert stat.S_IMODE(logs.stat().st_mode) & 0o077 == 0
