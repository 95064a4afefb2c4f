"""Stored text that tries to close `<cairn-context>`, through the API, a real worker, real hook
processes (SessionStart, UserPromptSubmit) and a real `cairn mcp`: every injected block holds
exactly one opening and one closing fence, and no tool answer holds a fence marker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests import fence_corpus as corpus
from tests.e2e.hook_runner import base, hook_env, run_hook
from tests.e2e.test_mcp_server import run_with_session, text_of
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]


def store_corpus(worker: WorkerProcess, project: Path) -> list[int]:
    observations = corpus.corpus_observations(str(project))
    status, created = worker.request("POST", "/api/observations", {"observations": observations})
    assert status == 201, created
    for memory in corpus.corpus_memories(str(project)):
        status, body = worker.request("POST", "/api/memories", memory)
        assert status == 201, body
    return [int(item["id"]) for item in created["items"]]


def injected(worker: WorkerProcess, project: Path, event: str, payload: dict[str, Any]) -> str:
    """The additionalContext a real hook process printed ('' when it injected nothing)."""
    result = run_hook(event, payload, hook_env(worker.home, CAIRN_PORT=str(worker.port)))
    assert result.returncode == 0, result.stderr
    out = result.context()
    if out is None:
        return ""
    return str(out["hookSpecificOutput"]["additionalContext"])


def test_stored_fence_markers_never_escape_the_injected_block(
    worker: WorkerProcess, project_cwd: Path
) -> None:
    project = project_cwd
    store_corpus(worker, project)
    start = {**base("sess-fence-1", project, "SessionStart"), "source": "startup"}
    block = injected(worker, project, "session-start", start)
    corpus.assert_one_fence(block)
    assert all(fact in block for fact in corpus.FACTS)
    assert all(f"fencepost {i} " in block for i in range(len(corpus.CORPUS)))

    status, body = worker.request(
        "POST", "/api/observations", {"observations": corpus.other_work(str(project))}
    )
    assert status == 201, body
    # Each prompt brings the next relevant items this session was not given yet.
    seen: set[int] = set()
    prompt = {**base("sess-fence-2", project, "UserPromptSubmit"), "prompt": "fencepost body end"}
    for _ in range(len(corpus.CORPUS)):
        block = injected(worker, project, "user-prompt-submit", prompt)
        if not block:
            break
        corpus.assert_one_fence(block)
        seen |= {i for i in range(len(corpus.CORPUS)) if f"fencepost body {i} " in block}
    assert len(seen) >= len(corpus.CORPUS) // 2, seen


def test_mcp_answers_hold_no_fence_marker(worker: WorkerProcess, project_cwd: Path) -> None:
    project = project_cwd
    ids = store_corpus(worker, project)

    async def body(session: ClientSession) -> list[str]:
        return [
            text_of(await session.call_tool("get_observations", {"ids": ids})),
            text_of(await session.call_tool("search", {"query": "fencepost body"})),
            text_of(await session.call_tool("get_context", {})),
            text_of(await session.call_tool("timeline", {})),
        ]

    answers = run_with_session(worker.home, project, body)
    for answer in answers:
        assert "fencepost" in answer
        assert corpus.fence_markers(answer) == [], answer
