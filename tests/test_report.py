"""Activity report: time spans, Markdown sections and figures, API and errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from worker.cli.portability import project_option
from worker.clock import parse_iso
from worker.memory.report import build_report, parse_when

pytestmark = pytest.mark.both_backends

ROOT = "/srv/billing"
NOW = parse_iso("2026-12-02T12:00:00Z")
DAY = 86_400_000


@pytest.mark.sqlite_only("no database: parses the --since text")
def test_parse_when_relative_and_iso() -> None:
    assert parse_when("7d", NOW) == NOW - 7 * DAY
    assert parse_when("24h", NOW) == NOW - DAY
    assert parse_when("2w", NOW) == NOW - 14 * DAY
    assert parse_when("30m", NOW) == NOW - 30 * 60_000
    assert parse_when("2026-12-01", NOW) == parse_iso("2026-12-01T00:00:00Z")
    for bad in ("yesterday", "7y", "", "-3d"):
        with pytest.raises(ValueError):
            parse_when(bad, NOW)


def _rows() -> dict[str, object]:
    return {
        "sessions": [
            {
                "id": "sess-aaaaaaaaaaaaaaaa",
                "project_name": "billing",
                "started_at": NOW - DAY,
                "request": "Fix invoice | rounding\nand tests",
                "prompts": 3,
                "observations": 9,
                "next_steps": ["Ship it"],
            }
        ],
        "file_changes": [
            {"file": f"{ROOT}/a.py", "changes": 2, "project_key": ROOT, "project_name": "billing"},
            {"file": f"{ROOT}/b.py", "changes": 1, "project_key": ROOT, "project_name": "billing"},
        ],
        "observation_types": {"file_write": 2, "command": 5},
        "prompt_count": 3,
        "learned": [{"session_id": "s", "items": ["Totals use banker's rounding"], "at": NOW}],
        "memories": [
            {
                "id": 1,
                "kind": "decision",
                "content": "Store cents as integers",
                "importance": 5,
                "created_at": NOW - DAY,
                "superseded_by": None,
                "archived_at": None,
            },
            {
                "id": 2,
                "kind": "decision",
                "content": "Use floats",
                "importance": 3,
                "created_at": NOW - 2 * DAY,
                "superseded_by": 1,
                "archived_at": None,
            },
            {
                "id": 3,
                "kind": "fact",
                "content": "Totals use banker's rounding",
                "importance": 3,
                "created_at": NOW,
                "superseded_by": None,
                "archived_at": None,
            },
        ],
    }


@pytest.mark.sqlite_only("no database: renders the rows given")
def test_build_report_markdown() -> None:
    report = build_report(_rows(), since=NOW - 7 * DAY, until=NOW, project="billing")
    md = report["markdown"]
    assert md.startswith("# Cairn activity report — billing\n")
    assert (
        "_2026-11-25 12:00 → 2026-12-02 12:00 UTC · 1 session · 3 prompts · 7 observations_" in md
    )
    assert "| 2026-12-01 12:00 | `sess-aaaaaaa` | 3 | 9 | Fix invoice \\| rounding |" in md
    assert "| `a.py` | 2 |" in md and "| `b.py` | 1 |" in md
    assert md.count("banker's rounding") == 1  # summary item and fact memory de-duplicated
    assert "- 2026-12-01 — Store cents as integers\n" in md
    assert "Use floats _(since superseded)_" in md
    assert "## Next steps (latest session)\n\n- Ship it" in md
    assert report["files_changed"][0] == {"file": "a.py", "changes": 2}
    assert build_report(_rows(), since=NOW - 7 * DAY, until=NOW, project="billing") == report


@pytest.mark.sqlite_only("no database: renders the rows given")
def test_report_for_all_projects_names_them() -> None:
    report = build_report(_rows(), since=NOW - DAY, until=NOW, project=None)
    assert report["markdown"].startswith("# Cairn activity report\n")
    assert "| Started | Project | Session |" in report["markdown"]
    assert report["files_changed"][0]["file"] == "billing: a.py"


@pytest.mark.sqlite_only("no database: renders the rows given")
def test_empty_report_says_so() -> None:
    empty = {
        "sessions": [],
        "file_changes": [],
        "observation_types": {},
        "prompt_count": 0,
        "learned": [],
        "memories": [],
    }
    md = build_report(empty, since=NOW - DAY, until=NOW, project=None)["markdown"]
    for line in (
        "No sessions in this period.",
        "No files changed.",
        "Nothing recorded.",
        "No decisions recorded.",
    ):
        assert line in md


def test_report_api(client: TestClient) -> None:
    client.post("/api/sessions", json={"session_id": "r1", "project": ROOT})
    client.post("/api/prompts", json={"session_id": "r1", "text": "Fix invoice totals"})
    client.post(
        "/api/observations",
        json={
            "project": ROOT,
            "session_id": "r1",
            "type": "file_write",
            "title": "Edit",
            "files": [f"{ROOT}/src/invoice.py"],
        },
    )
    client.post(
        "/api/sessions/r1/summarize",
        json={"last_assistant_message": "The cause was float rounding."},
    )
    data = client.get("/api/report", params={"project": "billing", "since": "1d"}).json()
    assert data["sessions"] == 1 and data["prompts"] == 1
    assert data["files_changed"] == [{"file": "src/invoice.py", "changes": 1}]
    assert data["learned"] == ["The cause was float rounding."]
    md = client.get("/api/report", params={"project": ROOT, "format": "markdown"})
    assert md.headers["content-type"].startswith("text/markdown")
    assert md.text.startswith("# Cairn activity report — billing")
    # an old window sees nothing
    old = client.get("/api/report", params={"since": "2020-01-01", "until": "2020-02-01"}).json()
    assert old["sessions"] == 0 and old["files_changed"] == []


def test_report_api_errors(client: TestClient) -> None:
    r = client.get("/api/report", params={"since": "last week"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "since"
    r = client.get("/api/report", params={"since": "1d", "until": "2d"})
    assert r.status_code == 400 and "before" in r.json()["error"]["message"]
    r = client.get("/api/report", params={"project": "ghost"})
    assert r.status_code == 404 and r.json()["error"]["field"] == "project"
    client.post("/api/sessions", json={"session_id": "x1", "project": "/a/app"})
    client.post("/api/sessions", json={"session_id": "x2", "project": "/b/app"})
    r = client.get("/api/report", params={"project": "app"})
    assert r.status_code == 400 and "ambiguous" in r.json()["error"]["message"]


@pytest.mark.sqlite_only("no database: maps a path to its project key")
def test_report_cli_maps_a_path_to_its_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    assert project_option(str(repo / "src" / "pkg"), team=False) == str(repo)
    assert project_option(str(tmp_path), team=False) == str(tmp_path)  # no repository: the folder
    assert project_option("billing", team=False) == "billing"  # not a path: a key or a name
    assert project_option("all", team=False) is None and project_option(None, team=False) is None
