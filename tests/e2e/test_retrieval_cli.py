"""`cairn search` and `cairn reindex` against a real worker with the real offline model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.worker_process import WorkerProcess
from tests.vector_margins import CLI_NOTES, CLI_RELEASE, CLI_UNRELATED_QUERY, assert_clear_of
from worker.settings import load_settings

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]


@pytest.fixture
def semantic_worker(isolated_home: Path, backend: str) -> Iterator[WorkerProcess]:
    """A real worker that embeds; on the `postgres` backend over the test's team database."""
    env = {"CAIRN_EMBED_ENABLED": "1"}
    if backend == "postgres":
        env["CAIRN_DATABASE_URL"] = os.environ["CAIRN_DATABASE_URL"]
    proc = WorkerProcess(home=isolated_home, env_extra=env).start()
    try:
        yield proc
    finally:
        proc.stop()


def cairn(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env["CAIRN_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "worker", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_search_and_reindex_from_the_terminal(semantic_worker: WorkerProcess) -> None:
    w = semantic_worker
    items = [{"project": "/p", "type": "note", "title": note} for note in CLI_NOTES]
    items.append({"project": "/p", "type": "command", **CLI_RELEASE})
    assert w.request("POST", "/api/observations", {"observations": items})[0] == 201

    # Refused on any CPU: the closest item is far below the threshold (tests/vector_margins.py).
    # Checked once the background embedder has the items (after a reindex of items that were
    # already embedded, the live worker reports no cosine: a known bug, see the closing note).
    deadline = time.monotonic() + 240
    while w.request("GET", "/api/embeddings/stats")[1]["coverage"] < 1.0:
        assert time.monotonic() < deadline, "the items were never embedded"
        time.sleep(0.5)
    query = urllib.parse.urlencode({"q": CLI_UNRELATED_QUERY, "project": "/p", "explain": "true"})
    _, why = w.request("GET", f"/api/search?{query}")
    threshold = load_settings().judgment.refusal_min_cosine
    assert_clear_of(why["explain"]["best_cosine"], threshold, False, CLI_UNRELATED_QUERY)

    done = cairn(w.home, "reindex")
    assert done.returncode == 0, done.stderr
    assert "[##############################] 100.0%" in done.stderr and "done" in done.stderr
    _, stats = w.request("GET", "/api/embeddings/stats")
    assert stats["coverage"] == 1.0 and stats["embedded"] == 31

    found = cairn(w.home, "search", "release tag", "--project", "/p", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["title"] == "make release"
    text = cairn(w.home, "search", "release tag", "--explain")
    assert "make release" in text.stdout and "signals: relevance" in text.stdout
    nothing = cairn(w.home, "search", CLI_UNRELATED_QUERY, "--project", "/p")
    assert nothing.stdout.strip() == "nothing relevant found (refused)"


@pytest.mark.sqlite_only("no worker and no database: the CLI says the worker is not running")
def test_cli_reports_a_stopped_worker(isolated_home: Path) -> None:
    result = cairn(isolated_home, "search", "anything")
    assert result.returncode == 1
    assert "not running" in result.stderr
