"""Two real workers on one real PostgreSQL database, each driven by real hook processes from its
own checkout of the same repository: they share decisions (in context and in the live feed)
and keep prompts and tool observations private (docs/team.md)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.hook_runner import base, hook_env, run_hook, tool_payload, wait_for
from tests.e2e.team_checkout import PROJECT, checkout
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


@pytest.fixture
def team(pg_url: str, tmp_path: Path) -> Iterator[dict[str, tuple[WorkerProcess, Path]]]:
    started: dict[str, tuple[WorkerProcess, Path]] = {}
    try:
        for name in ("ann", "bob"):
            email = f"{name}@acme.dev"
            worker = WorkerProcess(
                home=tmp_path / name / ".cairn",
                env_extra={"CAIRN_DATABASE_URL": pg_url, "CAIRN_AUTHOR": email},
            ).start()
            started[name] = (worker, checkout(tmp_path / name / "work" / "app", email))
        yield started
    finally:
        for worker, _ in started.values():
            worker.stop()


def hooks(worker: WorkerProcess, repo: Path, session: str) -> dict[str, str]:
    return hook_env(
        worker.home, CAIRN_AUTOSTART="0", CAIRN_DATABASE_URL=worker.env_extra["CAIRN_DATABASE_URL"]
    )


def prompt(worker: WorkerProcess, repo: Path, session: str, text: str) -> dict[str, Any] | None:
    result = run_hook(
        "UserPromptSubmit",
        {**base(session, repo, "UserPromptSubmit"), "prompt": text},
        hooks(worker, repo, session),
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    return result.context()


def test_two_workers_share_decisions_and_keep_prompts_private(
    team: dict[str, tuple[WorkerProcess, Path]],
) -> None:
    (ann, ann_repo), (bob, bob_repo) = team["ann"], team["bob"]
    for worker in (ann, bob):
        status, body = worker.request("GET", "/api/status")
        assert status == 200 and body["database"]["backend"] == "postgres"

    # Bob watches his dashboard's live feed.
    feed: list[dict[str, str]] = []
    stream = bob.events(timeout=30)
    reader = threading.Thread(target=lambda: feed.extend(stream), daemon=True)
    reader.start()

    # Ann works: a session from her checkout, a prompt, an edit, and a decision she records.
    env = hooks(ann, ann_repo, "s-ann")
    started = run_hook(
        "SessionStart",
        {**base("s-ann", ann_repo, "SessionStart"), "source": "startup"},
        env,
        cwd=ann_repo,
    )
    assert started.returncode == 0, started.stderr
    prompt(
        ann, ann_repo, "s-ann", "the payment webhook keeps timing out, secret idea: drop retries"
    )
    edit = run_hook(
        "PostToolUse",
        tool_payload(
            "s-ann",
            ann_repo,
            "Edit",
            {
                "file_path": str(ann_repo / "src" / "webhook.py"),
                "old_string": "a",
                "new_string": "b",
            },
            {"filePath": str(ann_repo / "src" / "webhook.py")},
            "toolu_1",
        ),
        env,
        cwd=ann_repo,
    )
    assert edit.returncode == 0, edit.stderr
    status, memory = ann.request(
        "POST",
        "/api/memories",
        {
            "project": PROJECT,
            "kind": "decision",
            "content": "Payment webhooks are processed asynchronously through the jobs queue, never inline",
        },
    )
    assert status == 201, memory
    wait_for(lambda: ann.request("GET", "/api/observations")[1]["items"])

    # The decision reaches Bob's live feed, by Ann.
    def decision_seen() -> bool:
        return any(
            e.get("event") == "memory.created" and json.loads(e["data"])["id"] == memory["id"]
            for e in feed
        )

    wait_for(decision_seen, timeout=20)

    # Bob's project is the same project (keyed by the remote), and Ann's decision is his context.
    context = prompt(
        bob, bob_repo, "s-bob", "are payment webhooks processed inline or through the jobs queue?"
    )
    assert context is not None
    text = context["hookSpecificOutput"]["additionalContext"]
    assert "asynchronously through the jobs queue" in text
    # Never Ann's prompt or her tool observations.
    assert "secret idea" not in text
    _, observed = bob.request("GET", "/api/observations")
    assert observed["items"] == []
    _, detail = bob.request("GET", "/api/sessions/s-ann")
    assert detail["prompts"] == [] and detail["observations"] == []
    # Search: Ann's prompt is not found by Bob, though Ann finds it.
    query = "/api/search?q=secret+idea+drop+retries&project=" + PROJECT
    status, found = bob.request("GET", query)
    assert status == 200, found
    assert all(hit["kind"] != "prompt" for hit in found["hits"])
    status, own = ann.request("GET", query)
    assert status == 200 and any(hit["kind"] == "prompt" for hit in own["hits"]), own
    # Nor on Bob's dashboard (feed, older page, timeline) or GET /api/timeline (the MCP tool's).
    scope = urllib.parse.quote(PROJECT, safe="")
    for path in ("/", "/feed/items", f"/timeline?project={scope}"):
        assert "secret idea" not in bob.request_text("GET", path), path
        assert "secret idea" in ann.request_text("GET", path), path
    status, line = bob.request("GET", f"/api/timeline?project={scope}&before=50")
    assert status == 200 and "secret idea" not in json.dumps(line), line
    stream.close()
