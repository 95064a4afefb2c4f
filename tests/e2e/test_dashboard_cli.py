"""`cairn open`: a one-time login link from a real CLI process against a real worker."""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]


def cli_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"CAIRN_HOME": str(home), "CAIRN_EMBED_ENABLED": "0", **(extra or {})})
    return env


def run_open(
    home: Path, *args: str, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker", "open", "--no-browser", *args],
        env=cli_env(home, extra),
        capture_output=True,
        text=True,
        timeout=60,
    )


def get(url: str, cookie: str | None = None) -> tuple[int, dict[str, str], str]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    headers = {"Accept": "text/html"}
    if cookie:
        headers["Cookie"] = cookie
    conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers)
    response = conn.getresponse()
    body = response.read().decode()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def test_open_prints_a_single_use_link(worker: WorkerProcess) -> None:
    done = run_open(worker.home, "memories")
    assert done.returncode == 0, done.stderr
    match = re.search(r"(http://127\.0\.0\.1:\d+/login/link/\S+)", done.stdout)
    assert match is not None, done.stdout
    url = match.group(1)
    assert worker.token not in done.stdout

    status, headers, _ = get(url)
    assert status == 303 and headers["location"] == "/memories"
    cookie = headers["set-cookie"].split(";")[0]
    assert get(worker.url + "/memories", cookie)[0] == 200

    again, _, body = get(url)
    assert again == 401 and "already used" in body


def test_open_starts_the_worker_when_it_is_down(
    tmp_path: Path, backend: str, database_env: dict[str, str]
) -> None:
    home = tmp_path / "cold-home"
    done = run_open(home, extra=database_env)
    try:
        assert done.returncode == 0, done.stderr
        assert "starting it" in done.stderr
        url = re.search(r"(http://127\.0\.0\.1:\d+/login/link/\S+)", done.stdout)
        assert url is not None
        assert get(url.group(1))[0] == 303
        # The worker it started uses the database this shell names (its home's file, the team's).
        port = urllib.parse.urlsplit(url.group(1)).port
        assert WorkerProcess(home=home, port=port or 0).backend() == backend
    finally:
        env = cli_env(home, database_env)
        subprocess.run([sys.executable, "-m", "worker", "stop"], env=env, timeout=30, check=False)
        assert not (home / "worker.json").exists()
