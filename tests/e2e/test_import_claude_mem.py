"""`cairn import claude-mem` on a database made by claude-mem's own code (tests/fixtures/claude_mem/
make_fixture.js, claude-mem 13.25.3 on Bun): read-only, mapped with dates and projects, a second
import stores nothing new, an unknown schema version is refused by name. Imports run into
a worker on each backend (its home's SQLite file, a team database), whose rows are counted there."""

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


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_mem" / "claude-mem.db"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_claude_mem_import_maps_rows_and_is_idempotent(
    worker: WorkerProcess, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "claude-mem.db"
    shutil.copy(FIXTURE, db)
    before = digest(db)
    assert main(["import", "claude-mem", str(db)]) == 0
    out = capsys.readouterr().out
    assert (
        "3 sessions, 4 prompts, 4 observations (1 decisions also as memories), 2 summaries" in out
    )
    assert digest(db) == before and not list(tmp_path.glob("claude-mem.db-*"))  # never written
    first_counts = counts(worker, backend)
    # Each summary is kept as a summary and as a note observation (4 + 2 observations); its
    # "Learned:" field becomes a fact memory, as a Cairn session's learned items do (1 + 2).
    assert first_counts == {
        "sessions": 3,
        "prompts": 4,
        "observations": 6,
        "summaries": 2,
        "memories": 3,
    }

    _, listed = worker.request("GET", "/api/observations?project=invoicer&limit=50")
    titles = {i["title"]: i for i in listed["items"]}
    bug = titles["CSV export crashed on accented customer names"]
    assert bug["type"] == "note" and bug["created_at"].startswith("2026-01-05T09:00:00")
    assert "billing/exports.py" in bug["files"] and "UTF-8 with BOM" in bug["body"]
    assert bug["session_id"] == "claude-mem:cc-0001"
    _, session = worker.request("GET", "/api/sessions/claude-mem:cc-0001")
    assert [p["text"] for p in session["prompts"]] == [
        "Fix the CSV export for accented names",
        "Also make Excel open it without mojibake",
    ]
    _, summary = worker.request("GET", "/api/sessions/claude-mem:cc-0003/summary")
    assert summary["request"] == "Why does the tile cache grow without bound?"
    assert summary["created_at"].startswith("2026-01-07T11:00:00")
    _, notes = worker.request("GET", "/api/observations?session_id=claude-mem:cc-0003")
    note = next(i for i in notes["items"] if i["title"].startswith("Session summary: "))
    assert "Learned: TileCache never evicted" in note["body"] and note["files"] == ["src/cache.rs"]
    _, memories = worker.request("GET", "/api/memories?project=invoicer&kind=decision")
    assert [m["content"][:44] for m in memories["items"]] == [
        "Export CSV as UTF-8 with a byte-order mark: "
    ]
    _, facts = worker.request("GET", "/api/memories?scope=all&kind=fact")
    assert any(m["content"].startswith("TileCache never evicted") for m in facts["items"])

    assert main(["import", "claude-mem", str(db)]) == 0
    again = capsys.readouterr().out
    assert "already stored" in again
    assert counts(worker, backend) == first_counts
    _, relisted = worker.request("GET", "/api/observations?project=invoicer&limit=50")
    assert len(relisted["items"]) == len(listed["items"])
    _, memories = worker.request("GET", "/api/memories?project=invoicer&kind=decision")
    assert len(memories["items"]) == 1


@pytest.mark.sqlite_only(
    "the claude-mem source is a SQLite file, refused before any worker or store is reached"
)
def test_an_unknown_schema_version_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "newer.db"
    shutil.copy(FIXTURE, db)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_versions (version, applied_at) VALUES (99, '2027')")
    assert main(["import", "claude-mem", str(db)]) == 1
    err = capsys.readouterr().err
    assert "claude-mem schema version 99" in err and "version 52" in err
    assert main(["import", "claude-mem", str(tmp_path / "missing.db")]) == 1
    assert "no claude-mem database at" in capsys.readouterr().err
    (tmp_path / "junk.db").write_bytes(b"not sqlite at all" * 100)
    assert main(["import", "claude-mem", str(tmp_path / "junk.db")]) == 1
    assert "not a readable SQLite database" in capsys.readouterr().err
