"""`cairn export | import | backup | report` as real processes next to a real worker, on either
backend: the home's SQLite file, or a team database (the round trips go into a second, empty
database of the same server, as into a fresh home's file)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.backends import process_store, rows
from tests.e2e.worker_process import WorkerProcess, free_port

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

ROOT = "/home/dev/orders"
# The tables of data: not the keyword index's own (SQLite's FTS shadows and search_index_*),
# nor the change logs (write order on one machine, not data), nor the schema's steps.
DATA_TABLES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
    "'CREATE VIRTUAL%' AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations' "
    "AND name != 'search_changes' "
    "AND name NOT LIKE '%_fts_%' AND name NOT LIKE 'search_index_%' ORDER BY name",
    "postgres": "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
    "AND tablename NOT IN ('schema_migrations', 'search_changes', 'vector_changes') "
    "ORDER BY tablename",
}
Dump = dict[str, list[tuple[Any, ...]]]


def _dump_with(query: Callable[[str], list[tuple[Any, ...]]], backend: str) -> Dump:
    names = [r[0] for r in query(DATA_TABLES[backend])]
    return {n: sorted(query(f'SELECT * FROM "{n}"'), key=repr) for n in names}


def _dump_file(path: Path) -> Dump:
    """Every data row of a SQLite file (a backup), read as it is: not opened as a store."""
    conn = sqlite3.connect(path)
    try:
        return _dump_with(lambda sql: [tuple(r) for r in conn.execute(sql)], "sqlite")
    finally:
        conn.close()


def _dump(process: WorkerProcess) -> Dump:
    """Every data row of the database a worker of that home and environment uses."""
    with process_store(process.env()) as store:
        return _dump_with(lambda sql: rows(store, sql), store.backend)


def _record_a_session(worker: WorkerProcess) -> None:
    assert worker.request("POST", "/api/sessions", {"session_id": "o-1", "project": ROOT})[0] == 201
    worker.request(
        "POST", "/api/prompts", {"session_id": "o-1", "text": "Add order export\u2028now\x85"}
    )
    for i in range(40):
        status, _ = worker.request(
            "POST",
            "/api/observations",
            {
                "project": ROOT,
                "session_id": "o-1",
                "type": "file_write",
                "title": f"Edit src/orders/export_{i}.py",
                "body": "x" * 300,
                "files": [f"{ROOT}/src/orders/export_{i}.py"],
            },
        )
        assert status == 201
    worker.request(
        "POST",
        "/api/observations",
        {
            "project": ROOT,
            "session_id": "o-1",
            "type": "command",
            "title": "$ pytest",
            "meta": {"exit_code": 0},
        },
    )
    status, summary = worker.request(
        "POST",
        "/api/sessions/o-1/summarize",
        {"last_assistant_message": "Done. The root cause was a missing index on orders."},
    )
    assert status == 201, summary


def test_export_backup_report_and_import_round_trip(
    worker: WorkerProcess, backend: str, other_database: dict[str, str], tmp_path: Path
) -> None:
    _record_a_session(worker)

    export_file = tmp_path / "cairn.jsonl"
    done = worker.cli("export", "-o", str(export_file))
    assert done.returncode == 0, done.stderr
    assert "export [" in done.stderr and "100.0%" in done.stderr
    lines = export_file.read_text().split("\n")[:-1]
    assert json.loads(lines[0])["rows"] == len(lines) - 1
    assert f"exported {len(lines) - 1} rows" in done.stderr

    backup = worker.cli("backup", "--json", "--quiet")
    if backend == "postgres":
        # A team database is backed up by its server: refused, saying so, and nothing written.
        assert backup.returncode == 1 and backup.stdout == ""
        assert "backed up by its PostgreSQL server (pg_dump" in backup.stderr
        assert "Traceback" not in backup.stderr
        assert not (worker.home / "backups").exists()
    else:
        assert backup.returncode == 0, backup.stderr
        backup_path = Path(json.loads(backup.stdout)["path"])
        assert backup_path.parent == worker.home / "backups"
        assert _dump_file(backup_path) == _dump(worker)

    report = worker.cli("report", "--project", ROOT, "--since", "1d")
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("# Cairn activity report — orders")
    assert "missing index on orders" in report.stdout
    assert "| `src/orders/export_0.py` | 1 |" in report.stdout

    # import into a fresh home with no worker: its database directly
    fresh = WorkerProcess(home=tmp_path / "fresh-home", env_extra=other_database)
    first = fresh.cli("import", str(export_file))
    assert first.returncode == 0, first.stderr
    assert f"imported {len(lines) - 1} rows: {len(lines) - 1} new" in first.stderr
    assert _dump(fresh) == _dump(worker)
    again = fresh.cli("import", str(export_file))
    assert again.returncode == 0 and ": 0 new," in again.stderr
    assert _dump(fresh) == _dump(worker)


def import_in_a_shell_without_the_limit(
    target: WorkerProcess, export_file: Path
) -> subprocess.CompletedProcess[str]:
    """`cairn import` from a shell whose settings lack the worker's CAIRN_MAX_BODY_BYTES."""
    shell_env = {k: v for k, v in target.env().items() if k != "CAIRN_MAX_BODY_BYTES"}
    return subprocess.run(
        [sys.executable, "-m", "worker", "import", str(export_file)],
        env=shell_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_through_a_running_worker_in_chunks(
    worker: WorkerProcess, other_database: dict[str, str], tmp_path: Path
) -> None:
    _record_a_session(worker)
    export_file = tmp_path / "cairn.jsonl"
    assert worker.cli("export", "-o", str(export_file), "--quiet").returncode == 0
    rows = len(export_file.read_text().split("\n")) - 2

    # a second worker with a small body limit: the CLI must split the import into requests
    # (this shell does not know the worker's limit: it learns it from the 413 answers)
    target = WorkerProcess(
        home=tmp_path / "target-home",
        env_extra={"CAIRN_MAX_BODY_BYTES": "4096", **other_database},
    )
    target.start()
    try:
        done = import_in_a_shell_without_the_limit(target, export_file)
        assert done.returncode == 0, done.stderr
        assert f"imported {rows} rows: {rows} new" in done.stderr
        status, session = target.request("GET", "/api/sessions/o-1")
        assert status == 200 and session["summary"]["files"][0] == "src/orders/export_0.py"
        status, found = target.request("GET", "/api/observations?session_id=o-1&limit=100")
        assert status == 200 and len(found["items"]) == 41
        again = target.cli("import", str(export_file))
        assert again.returncode == 0 and f": 0 new, {rows} unchanged" in again.stderr
    finally:
        target.stop()
    assert _dump(target) == _dump(worker)


def test_cli_errors_are_clear(worker: WorkerProcess, backend: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hello": 1}\n')
    for how in ([], ["--direct"]):  # through the running worker, and into the database
        done = worker.cli("import", str(bad), *how)
        assert done.returncode == 1, how
        assert "not a Cairn export header" in done.stderr and "Traceback" not in done.stderr
    missing = worker.cli("import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    if backend == "postgres":
        # A team database never is "not there yet": unreachable, it is named, password masked.
        url = f"postgresql://ann:s3cret@127.0.0.1:{free_port()}/team?connect_timeout=3"
        unreachable = WorkerProcess(home=tmp_path / "empty", env_extra={"CAIRN_DATABASE_URL": url})
        for command in (["export"], ["backup"], ["report"], ["import", "--direct", str(bad)]):
            out = unreachable.cli(*command)
            assert out.returncode == 1, (command, out.stderr)
            assert "postgresql://ann:***@127.0.0.1" in out.stderr, command
            assert "unreachable" in out.stderr, command
            assert "s3cret" not in out.stderr + out.stdout and "Traceback" not in out.stderr
    else:
        empty_home = WorkerProcess(home=tmp_path / "empty")
        for command in (["export"], ["backup"], ["report"]):
            out = empty_home.cli(*command)
            assert out.returncode == 1 and "no database" in out.stderr, command
    report = worker.cli("report", "--since", "someday")
    assert report.returncode == 1 and "'since' must be" in report.stderr
