"""`cairn export | import | backup | report` in-process against a real database file (no worker)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from worker.cli import main
from worker.cli.portability import ProgressBar
from worker.settings import Settings

ROOT = "/home/dev/cli-proj"


def _record(client: TestClient) -> None:
    client.post("/api/sessions", json={"session_id": "c-1", "project": ROOT})
    client.post("/api/prompts", json={"session_id": "c-1", "text": "Rename the CLI flags"})
    client.post(
        "/api/observations",
        json={"project": ROOT, "session_id": "c-1", "type": "file_write", "title": "Edit",
              "files": [f"{ROOT}/cli.py"]},
    )  # fmt: skip


def test_export_to_stdout_then_import_from_stdin(
    client: TestClient, settings: Settings, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:  # fmt: skip
    _record(client)
    assert main(["export", "--quiet"]) == 0
    out = capsys.readouterr().out
    header = json.loads(out.split("\n", 1)[0])
    assert header["format"] == "cairn-export" and header["rows"] == out.count("\n") - 1

    monkeypatch.setenv("CAIRN_HOME", str(tmp_path / "other"))
    monkeypatch.setattr("sys.stdin", io.StringIO(out))
    assert main(["import", "-", "--quiet"]) == 0
    assert f"imported {header['rows']} rows: {header['rows']} new" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(out))
    assert main(["import", "-"]) == 0
    err = capsys.readouterr().err
    assert ": 0 new," in err and "import [" in err  # the final progress line


def test_backup_keep_and_report_json(
    client: TestClient, settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _record(client)
    target = tmp_path / "bk"
    for _ in range(3):
        assert main(["backup", "--output-dir", str(target), "--keep", "2", "--quiet"]) == 0
    assert len(list(target.glob("cairn-*Z.db"))) == 2
    assert "removed old backup" in capsys.readouterr().out
    assert main(["report", "--project", ROOT, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sessions"] == 1 and data["files_changed"] == [{"file": "cli.py", "changes": 1}]
    report_file = tmp_path / "r.md"
    assert main(["report", "-o", str(report_file)]) == 0
    assert report_file.read_text().startswith("# Cairn activity report\n")


def test_import_conflict_message(
    client: TestClient, settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _record(client)
    export = tmp_path / "e.jsonl"
    assert main(["export", "-o", str(export), "--quiet"]) == 0
    lines = export.read_text().split("\n")
    edited = [
        line.replace("Rename the CLI flags", "something else") if '"prompts"' in line else line
        for line in lines
    ]
    export.write_text("\n".join(edited))
    capsys.readouterr()
    assert main(["import", str(export), "--direct", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "nothing written" in err and "prompts" in err and "on_conflict" in err
    assert main(["import", str(export), "--direct", "--quiet", "--on-conflict", "replace"]) == 0
    assert "1 replaced" in capsys.readouterr().err


def test_progress_bar_lines() -> None:
    stream = io.StringIO()
    bar = ProgressBar("export", stream)
    bar(50, 200)
    bar(200, 200)
    bar.finish()
    assert stream.getvalue() == "export [##############################] 100.0% 200/200\n"
    assert ProgressBar("x", io.StringIO()).line(1, 4) == (
        "x [#######.......................]  25.0% 1/4"
    )
