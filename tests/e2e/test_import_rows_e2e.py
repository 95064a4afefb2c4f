"""Bad stored values and bad imported rows against a real worker: SessionStart (a real hook
process) still injects context, and `cairn import` through the worker in several requests
stores nothing when one row, in the last request, is bad. On both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.backends import execute, process_store, value
from tests.e2e.hook_runner import base, hook_env, run_hook
from tests.e2e.test_portability_cli import import_in_a_shell_without_the_limit
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

# Values no reader can parse, in the columns that hold JSON as text (both backends) ...
BAD_TEXT = (
    "UPDATE observations SET meta = '{not json', files = '[broken' WHERE id % 2 = 0",
    "UPDATE memories SET tags = 'nope', meta = '[1]'",
    "UPDATE sessions SET plan = '{bad'",
)
# ... and in the time columns, which only SQLite lets hold text (PostgreSQL's are BIGINT).
BAD_TIMES = (
    "UPDATE observations SET created_at = 'yesterday' WHERE id = 3",
    "UPDATE memories SET updated_at = 'x'",
    "UPDATE sessions SET started_at = 'z'",
)


def record(worker: WorkerProcess, project: str) -> None:
    assert worker.request("POST", "/api/sessions", {"session_id": "s-1", "project": project})[0]
    for i in range(30):
        obs = {"project": project, "session_id": "s-1", "type": "command",
               "title": f"Run alembic upgrade step {i}", "body": "x" * 200,
               "meta": {"exit_code": 0}}  # fmt: skip
        assert worker.request("POST", "/api/observations", obs)[0] == 201
    memory = {"project": project, "kind": "decision", "pinned": True,
              "content": "Orders migrations run through alembic"}  # fmt: skip
    assert worker.request("POST", "/api/memories", memory)[0] == 201


def test_session_start_injects_context_over_bad_stored_values(
    worker: WorkerProcess, project_cwd: Path
) -> None:
    record(worker, str(project_cwd))
    with process_store(worker.env()) as store:
        for sql in BAD_TEXT + (BAD_TIMES if store.backend == "sqlite" else ()):
            execute(store, sql)
        assert value(store, "SELECT COUNT(*) FROM observations WHERE meta = '{not json'") == 15
    payload = {**base("s-2", project_cwd, "SessionStart"), "source": "startup"}
    result = run_hook("session-start", payload, hook_env(worker.home, CAIRN_PORT=str(worker.port)))
    assert result.returncode == 0, result.stderr
    out = result.context()
    assert out is not None, "SessionStart injected nothing"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "Orders migrations run through alembic" in context
    assert "Run alembic upgrade step 29" in context


def test_chunked_cli_import_with_one_bad_row_stores_nothing(
    worker: WorkerProcess, other_database: dict[str, str], project_cwd: Path, tmp_path: Path
) -> None:
    record(worker, str(project_cwd))
    export_file = tmp_path / "cairn.jsonl"
    assert worker.cli("export", "-o", str(export_file), "--quiet").returncode == 0
    lines = export_file.read_text().split("\n")[:-1]
    last = max(i for i, line in enumerate(lines) if json.loads(line).get("table") == "observations")
    bad = json.loads(lines[last])
    bad["row"]["meta"] = "{not json"
    lines[last] = json.dumps(bad)
    export_file.write_text("\n".join(lines) + "\n")

    # A worker with a small body limit: the export goes in many requests, the bad row last.
    target = WorkerProcess(
        home=tmp_path / "target", env_extra={"CAIRN_MAX_BODY_BYTES": "4096", **other_database}
    )
    target.start()
    try:
        done = import_in_a_shell_without_the_limit(target, export_file)
        assert done.returncode == 1, done.stderr
        assert f"line {last + 1}" in done.stderr and "'meta' is not valid JSON" in done.stderr
        status, found = target.request("GET", "/api/observations?limit=100")
        assert status == 200 and found["items"] == []
    finally:
        target.stop()
    with process_store(target.env()) as store:
        assert value(store, "SELECT COUNT(*) FROM projects") == 0
        assert value(store, "SELECT COUNT(*) FROM sessions") == 0
