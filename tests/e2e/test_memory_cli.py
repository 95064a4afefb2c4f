"""`cairn memory add | list | show | edit | forget` against a real worker, from a real checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "src" / "billing-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "app").mkdir()
    return repo


def _id(out: str) -> int:
    found = re.search(r"#(\d+)", out)
    assert found is not None, out
    return int(found.group(1))


def test_a_memory_added_in_a_checkout_is_that_projects(
    worker: WorkerProcess, checkout: Path, tmp_path: Path
) -> None:
    text = "We decided to use uv instead of pip-tools because lock times went from 90 s to 4 s"
    added = worker.cli("memory", "add", text, cwd=checkout / "app")  # a subfolder: same project
    assert added.returncode == 0, added.stderr
    mid = _id(added.stdout)
    status, stored = worker.request("GET", f"/api/memories/{mid}")
    assert status == 200
    assert stored["project"] == str(checkout) and stored["kind"] == "decision"  # inferred
    listed = worker.cli("memory", "list", cwd=checkout)
    assert listed.returncode == 0 and f"#{mid}" in listed.stdout and "uv instead" in listed.stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    here = worker.cli("memory", "list", cwd=elsewhere)
    assert here.returncode == 0 and f"#{mid}" not in here.stdout and "no memories" in here.stdout
    assert f"#{mid}" in worker.cli("memory", "list", "--all", cwd=elsewhere).stdout
    shown = worker.cli("memory", "show", str(mid))
    assert shown.returncode == 0 and text in shown.stdout


def test_edit_pins_and_rescores_then_forget_asks_first(
    worker: WorkerProcess, checkout: Path
) -> None:
    added = worker.cli("memory", "add", "Staging resets nightly", "--kind", "fact", cwd=checkout)
    mid = _id(added.stdout)
    edited = worker.cli("memory", "edit", str(mid), "--importance", "5", "--pin", "--json")
    assert edited.returncode == 0, edited.stderr
    _, stored = worker.request("GET", f"/api/memories/{mid}")
    assert stored["pinned"] is True and stored["importance"] == 5
    refused = worker.cli("memory", "forget", str(mid))  # stdin is not a terminal: no one to ask
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert worker.request("GET", f"/api/memories/{mid}")[0] == 200
    forgot = worker.cli("memory", "forget", str(mid), "--yes")
    assert forgot.returncode == 0, forgot.stderr
    assert worker.request("GET", f"/api/memories/{mid}")[0] == 404
    gone = worker.cli("memory", "show", str(mid))
    assert gone.returncode == 1 and "HTTP 404" in gone.stderr and "Traceback" not in gone.stderr


def test_bad_input_gets_the_apis_message_and_saves_nothing(
    worker: WorkerProcess, checkout: Path
) -> None:
    blank = worker.cli("memory", "add", "   ", cwd=checkout)
    assert blank.returncode == 1
    assert "'content' must not be blank" in blank.stderr and "Traceback" not in blank.stderr
    kind = worker.cli("memory", "add", "x", "--kind", "gotcha", cwd=checkout)
    assert kind.returncode == 2 and "invalid choice" in kind.stderr
    importance = worker.cli("memory", "add", "x", "--importance", "9", cwd=checkout)
    assert importance.returncode == 2 and "1..5" in importance.stderr
    nothing = worker.cli("memory", "edit", "1")
    assert nothing.returncode == 2 and "nothing to change" in nothing.stderr
    _, page = worker.request("GET", "/api/memories?scope=all")
    assert page["items"] == []
