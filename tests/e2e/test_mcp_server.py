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

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

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
    "report_use",
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


def test_memory_workflow_end_to_end(worker: WorkerProcess, project: Path) -> None:
    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["saved"] = await session.call_tool(
            "save_memory",
            {
                "content": "We chose SQLite WAL mode so concurrent hook writes never block readers",
                "kind": "decision",
                "tags": ["sqlite"],
            },
        )
        out["global"] = await session.call_tool(
            "save_memory",
            {
                "content": "The user prefers pytest over unittest",
                "kind": "preference",
                "scope": "global",
            },
        )
        out["found"] = await session.call_tool("search", {"query": "SQLite WAL mode"})
        out["context"] = await session.call_tool("get_context", {"query": "sqlite wal hook writes"})
        return out

    out = run_with_session(worker.home, project, body)
    saved = text_of(out["saved"])
    assert not out["saved"].is_error, saved
    assert saved.startswith("Saved memory:") and "[decision]" in saved and str(project) in saved
    assert "(global;" in text_of(out["global"])
    memory_id = int(saved.split("memory:", 1)[1].split(" ", 1)[0])
    found = text_of(out["found"])
    assert not out["found"].is_error, found
    assert f"memory:{memory_id}" in found and "WAL" in found
    assert not out["context"].is_error, text_of(out["context"])

    async def edit(session: ClientSession) -> dict[str, Any]:
        return {
            "updated": await session.call_tool(
                "update_memory", {"id": memory_id, "importance": 5, "pinned": True}
            ),
            "empty": await session.call_tool("update_memory", {"id": memory_id}),
            "forgot": await session.call_tool("forget", {"id": memory_id}),
            "after": await session.call_tool(
                "search", {"query": "SQLite WAL mode", "kind": "memory"}
            ),
            "missing": await session.call_tool("update_memory", {"id": 987654, "content": "x"}),
        }

    out = run_with_session(worker.home, project, edit)
    assert "importance 5" in text_of(out["updated"]) and "pinned" in text_of(out["updated"])
    assert out["empty"].is_error and "Nothing to update" in text_of(out["empty"])
    assert "Archived memory" in text_of(out["forgot"])
    assert f"memory:{memory_id}" not in text_of(out["after"])
    missing = text_of(out["missing"])
    assert out["missing"].is_error
    assert "PATCH /api/memories/987654 failed with HTTP 404" in missing


def test_resume_session_and_report(worker: WorkerProcess, project: Path) -> None:
    sid = "s-resume-1"
    assert worker.request("POST", "/api/sessions", {"session_id": sid, "project": str(project)})[
        0
    ] in (200, 201)
    worker.request("POST", "/api/prompts", {"session_id": sid, "text": "fix the flaky parser test"})
    worker.request(
        "POST",
        "/api/observations",
        {
            "project": str(project),
            "session_id": sid,
            "type": "file_write",
            "title": "Edit src/parser.py",
            "files": ["src/parser.py"],
        },
    )
    status, _ = worker.request("POST", f"/api/sessions/{sid}/checkpoint", {"trigger": "manual"})
    assert status in (200, 201)

    async def body(session: ClientSession) -> tuple[Any, Any]:
        return (
            await session.call_tool("resume_session", {}),
            await session.call_tool("report", {"days": 7}),
        )

    resumed, report = run_with_session(worker.home, project, body)
    text = text_of(resumed)
    assert not resumed.is_error, text
    assert f"Session {sid}" in text and "Checkpoint" in text
    assert "fix the flaky parser test" in text and "Edit src/parser.py" in text
    assert not report.is_error, text_of(report)
    assert text_of(report).strip()

    async def elsewhere(session: ClientSession) -> Any:
        return await session.call_tool("report", {"project": "/never/seen"})

    unknown = run_with_session(worker.home, project, elsewhere)
    assert not unknown.is_error
    assert text_of(unknown) == "Nothing recorded yet for project /never/seen."


def test_starts_the_worker_when_it_is_down(
    isolated_home: Path, project: Path, backend: str, database_env: dict[str, str]
) -> None:
    # Creates the token and database (the home's file, or the team database's schema).
    first = WorkerProcess(home=isolated_home, env_extra=database_env).start()
    port = first.port
    first.stop()
    assert not (isolated_home / "worker.json").exists()

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("timeline", {})

    extra = {"CAIRN_PORT": str(port), **database_env}
    started_on = None
    try:
        result = run_with_session(isolated_home, project, body, extra)
        # The worker it started uses the database the MCP server's environment names.
        spawned = WorkerProcess(home=isolated_home)
        spawned.port = int(json.loads((isolated_home / "worker.json").read_text())["port"])
        started_on = spawned.backend()
    finally:
        runtime = isolated_home / "worker.json"
        if runtime.exists():  # the worker `cairn mcp` started for us
            os.kill(int(json.loads(runtime.read_text())["pid"]), signal.SIGTERM)
    assert not result.is_error, text_of(result)
    assert "No activity recorded yet" in text_of(result)
    assert started_on == backend


def test_report_use_records_what_the_agent_did_with_an_injected_memory(
    worker: WorkerProcess, project: Path
) -> None:
    """An editor's agent says a memory Cairn gave it helped: the record shows it used, with the
    agent's words as evidence; a memory never given is a clear tool error."""
    for other in ("Releases are tagged from main", "Docs are built with mkdocs"):
        worker.request("POST", "/api/memories", {"content": other, "project": str(project)})
    status, saved = worker.request(
        "POST",
        "/api/memories",
        {"content": "Invoice exports are UTF-8 with a BOM for Excel", "project": str(project)},
    )
    assert status == 201, saved
    prompt = {
        "session_id": "mcp-use",
        "project": str(project),
        "text": "Are the invoice exports UTF-8 with a BOM?",
        "context": {},
    }
    status, asked = worker.request("POST", "/api/prompts", prompt)
    assert status == 201 and saved["id"] in [i["id"] for i in asked["context"]["items"]], asked

    async def body(session: ClientSession) -> dict[str, Any]:
        return {
            "used": await session.call_tool(
                "report_use",
                {"id": saved["id"], "outcome": "used", "evidence": "kept the BOM in the fix"},
            ),
            "never": await session.call_tool("report_use", {"id": 987654, "outcome": "used"}),
            "bad": await session.call_tool("report_use", {"id": saved["id"], "outcome": "meh"}),
        }

    out = run_with_session(worker.home, project, body)
    assert text_of(out["used"]) == (
        f"Recorded: memory {saved['id']} used (kept the BOM in the fix)."
    )
    status, record = worker.request("GET", f"/api/use/memory/{saved['id']}")
    assert (record["used"], record["last_used"]["evidence"]) == (1, "kept the BOM in the fix")
    assert out["never"].is_error and "never given" in text_of(out["never"])
    assert out["bad"].is_error and "outcome" in text_of(out["bad"])
