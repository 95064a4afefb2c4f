"""`cairn import kiro-memory` on a database made by kiro-memory's own SDK (tests/fixtures/
kiro_memory/make_fixture.mjs, kiro-memory 3.1.1 on Node): read-only, rows mapped with their dates
and projects, a second import stores nothing new, an unknown schema version refused by name.
Imports run into a worker on each backend (its home's SQLite file, a team database), whose rows
are counted there."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.backends import process_counts
from tests.e2e.worker_process import WorkerProcess
from worker.cli import main

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

TABLES = ("sessions", "prompts", "observations", "summaries", "memories")


def counts(worker: WorkerProcess, backend: str) -> dict[str, int]:
    """Rows per table in the worker's own database (its home's file, or the team database)."""
    return process_counts(worker.env(), backend, TABLES)


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kiro_memory" / "kiro-memory.db"


def rows(sql: str) -> list[sqlite3.Row]:
    with sqlite3.connect(f"{FIXTURE.as_uri()}?mode=ro", uri=True) as conn:
        conn.row_factory = sqlite3.Row
        return list(conn.execute(sql))


def test_kiro_memory_import_maps_rows_and_is_idempotent(
    worker: WorkerProcess, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "kiro-memory.db"
    shutil.copy(FIXTURE, db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    assert main(["import", "kiro-memory", str(db)]) == 0
    out = capsys.readouterr().out
    assert (
        "2 sessions, 3 prompts, 3 observations (1 decisions also as memories), 1 summaries" in out
    )
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not list(tmp_path.glob("kiro-memory.db-*"))
    first_counts = counts(worker, backend)
    # Its summary belongs to no imported session (kiro's SDK files it under one of its own), so
    # it is kept as a note observation only (3 + 1).
    assert first_counts == {
        "sessions": 2,
        "prompts": 3,
        "observations": 4,
        "summaries": 0,
        "memories": 1,
    }

    _, listed = worker.request("GET", "/api/observations?project=invoicer&limit=50")
    titles = {i["title"]: i for i in listed["items"]}
    bug = titles["CSV export crashed on accented customer names"]
    source = rows("SELECT created_at_epoch FROM observations WHERE type = 'bugfix'")[0]
    assert bug["type"] == "note" and "billing/tests/test_exports.py" in bug["files"]
    assert "Marie-Hélène" in bug["body"]
    from datetime import datetime

    stored = datetime.fromisoformat(bug["created_at"].replace("Z", "+00:00"))
    assert int(stored.timestamp() * 1000) == source["created_at_epoch"]
    summary = next(t for t in titles if t.startswith("Session summary: "))
    assert "Learned: The export used latin-1" in titles[summary]["body"]
    _, session = worker.request("GET", "/api/sessions/kiro-memory:kiro-0001")
    assert [p["text"] for p in session["prompts"]] == [
        "Fix the CSV export for accented names",
        "Also make Excel open it without mojibake",
    ]
    _, memories = worker.request("GET", "/api/memories?project=invoicer&kind=decision")
    assert [m["content"][:42] for m in memories["items"]] == [
        "Export CSV as UTF-8 with a byte-order mark"
    ]
    _, tiles = worker.request("GET", "/api/observations?project=tiles-rs")
    assert [i["title"] for i in tiles["items"]] == ["Tile cache had no eviction"]

    assert main(["import", "kiro-memory", str(db)]) == 0
    assert "already stored" in capsys.readouterr().out
    assert counts(worker, backend) == first_counts
    _, relisted = worker.request("GET", "/api/observations?project=invoicer&limit=50")
    assert len(relisted["items"]) == len(listed["items"])


@pytest.mark.sqlite_only(
    "the kiro-memory source is a SQLite file, refused before any worker or store is reached"
)
def test_an_unknown_kiro_schema_version_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "newer.db"
    shutil.copy(FIXTURE, db)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_versions (version, applied_at) VALUES (14, '2027')")
    assert main(["import", "kiro-memory", str(db)]) == 1
    err = capsys.readouterr().err
    assert "kiro-memory schema version 14" in err and "version 13" in err
    claude_mem = Path(__file__).resolve().parents[1] / "fixtures" / "claude_mem" / "claude-mem.db"
    assert main(["import", "kiro-memory", str(claude_mem)]) == 1
    assert "is not a kiro-memory database" in capsys.readouterr().err
