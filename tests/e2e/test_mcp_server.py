"""`cairn mcp` as a real subprocess, driven by the MCP SDK's stdio client against a real worker."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e

EXPECTED_TOOLS = {
    "search",
    "timeline",
    "get_observations",
    "save_memory",
    "update_memory",
    "forget",
    "get_context",
    "resume_session",
    "report",
}


def _server_env(home: Path, project: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update(extra or {})
    env.update({"CAIRN_HOME": str(home), "CAIRN_EMBED_ENABLED": "0", "CAIRN_PROJECT": str(project)})
    return env


@asynccontextmanager
async def mcp_session(
    home: Path, project: Path, extra_env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "worker", "mcp"],
        env=_server_env(home, project, extra_env),
        cwd=str(project),
    )
    with open(home.parent / "mcp-stderr.log", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "text", None))


def run_with_session(
    home: Path,
    project: Path,
    body: Callable[[ClientSession], Any],
    extra_env: dict[str, str] | None = None,
) -> Any:
    async def main() -> Any:
        async with mcp_session(home, project, extra_env) as session:
            return await body(session)

    return anyio.run(main)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def test_lists_every_tool_with_input_schemas(worker: WorkerProcess, project: Path) -> None:
    async def body(session: ClientSession) -> Any:
        return await session.list_tools()

    tools = run_with_session(worker.home, project, body).tools
    assert {t.name for t in tools} == EXPECTED_TOOLS
    by_name = {t.name: t for t in tools}
    assert by_name["search"].input_schema["required"] == ["query"]
    assert by_name["get_observations"].input_schema["properties"]["ids"]["type"] == "array"
    assert all(t.description for t in tools)


def test_get_observations_returns_full_details(worker: WorkerProcess, project: Path) -> None:
    status, created = worker.request(
        "POST",
        "/api/observations",
        {
            "project": str(project),
            "session_id": "s-mcp-1",
            "type": "command",
            "title": "pytest tests/test_parser.py failed on empty input",
            "body": "AssertionError: expected [] got None",
            "files": ["src/parser.py"],
            "tool_name": "Bash",
        },
    )
    assert status == 201
    oid = created["id"]

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("get_observations", {"ids": [oid, 999999]})

    result = run_with_session(worker.home, project, body)
    text = text_of(result)
    assert not result.is_error
    assert f"#{oid} COMMAND pytest tests/test_parser.py failed on empty input" in text
    assert "AssertionError: expected [] got None" in text
    assert "src/parser.py" in text
    assert "Not found: #999999" in text


def test_timeline_centres_on_an_observation(worker: WorkerProcess, project: Path) -> None:
    ids = []
    for n in range(5):
        _, row = worker.request(
            "POST",
            "/api/observations",
            {
                "project": str(project),
                "type": "note",
                "title": f"step {n}",
                "created_at": f"2026-01-01T10:0{n}:00Z",
            },
        )
        ids.append(row["id"])

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("timeline", {"anchor_id": ids[2], "before": 1, "after": 1})

    text = text_of(run_with_session(worker.home, project, body))
    lines = text.splitlines()
    assert [line.rsplit(" ", 2)[-2:] for line in lines] == [
        ["step", "1"],
        ["step", "2"],
        ["step", "3"],
    ]
    assert lines[1].startswith("> #")


def test_invalid_arguments_are_rejected_with_the_field_named(
    worker: WorkerProcess, project: Path
) -> None:
    async def body(session: ClientSession) -> Any:
        return await session.call_tool("get_observations", {"ids": []})

    result = run_with_session(worker.home, project, body)
    assert result.is_error
    assert "ids" in text_of(result)


def test_save_and_search_memory_or_a_clear_error(worker: WorkerProcess, project: Path) -> None:
    async def body(session: ClientSession) -> tuple[Any, Any]:
        saved = await session.call_tool(
            "save_memory",
            {"content": "We chose SQLite WAL mode for concurrent hook writes", "kind": "decision"},
        )
        found = await session.call_tool("search", {"query": "SQLite WAL"})
        return saved, found

    saved, found = run_with_session(worker.home, project, body)
    routes = worker.request("GET", "/openapi.json")[1]["paths"]
    if "/api/memories" in routes:
        assert not saved.is_error, text_of(saved)
        assert "SQLite WAL" in text_of(saved)
    else:
        assert saved.is_error
        assert "has no POST /api/memories endpoint" in text_of(saved)
    if "/api/search" in routes:
        assert not found.is_error, text_of(found)
    else:
        assert found.is_error
        assert "has no GET /api/search endpoint" in text_of(found)


def test_starts_the_worker_when_it_is_down(isolated_home: Path, project: Path) -> None:
    first = WorkerProcess(home=isolated_home).start()  # creates the token and database
    port = first.port
    first.stop()
    assert not (isolated_home / "worker.json").exists()

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("timeline", {})

    try:
        result = run_with_session(isolated_home, project, body, {"CAIRN_PORT": str(port)})
    finally:
        runtime = isolated_home / "worker.json"
        if runtime.exists():  # the worker `cairn mcp` started for us
            os.kill(int(json.loads(runtime.read_text())["pid"]), signal.SIGTERM)
    assert not result.is_error, text_of(result)
    assert "No activity recorded yet" in text_of(result)
