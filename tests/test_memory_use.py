"""The outcome of one injection, from what the session did after it (worker/memory/use.py)."""

from __future__ import annotations

from typing import Any

import pytest

from worker.memory.use import (
    corrects,
    item_commands,
    item_files,
    judge,
    same_command,
    same_file,
)

pytestmark = pytest.mark.sqlite_only("pure functions: no database")

MEMORY = {
    "kind": "memory",
    "type": "fact",
    "title": "Exports are UTF-8 with a BOM",
    "body": "Exports are UTF-8 with a BOM: see billing/exports.py and run "
    "`pytest tests/test_exports.py -k bom` after changing DEFAULT_CHARSET.",
    "files": [],
}
COMMAND = {
    "kind": "observation",
    "type": "command",
    "title": "Run the migrations (exit 1)",
    "body": "command: make db-migrate ENV=dev\nexit code: 1\nstderr: relation missing",
    "files": [],
}


def obs(type_: str, files: list[str] = (), body: str = "") -> dict[str, Any]:  # type: ignore[assignment]
    return {"type": type_, "files": list(files), "body": body, "title": ""}


def test_an_item_names_its_files_and_commands() -> None:
    assert item_files(MEMORY) == ["billing/exports.py", "tests/test_exports.py"]
    assert item_commands(MEMORY) == ["pytest tests/test_exports.py -k bom"]
    assert item_commands(COMMAND) == ["make db-migrate ENV=dev"]
    assert item_files({"title": "v1.2 and 3.14", "body": "", "files": ["a/b.rs"]}) == ["a/b.rs"]


def test_opening_or_editing_a_named_file_is_use() -> None:
    read = judge(MEMORY, [obs("research", ["src/billing/exports.py"])], None)
    assert (read.outcome, read.evidence) == ("used", "read src/billing/exports.py")
    edit = judge(MEMORY, [obs("file_write", ["billing/exports.py"])], None)
    assert edit.evidence == "edited billing/exports.py"
    other = judge(MEMORY, [obs("research", ["billing/models.py"])], None)
    assert other.outcome == "ignored"


def test_running_the_command_given_is_use() -> None:
    ran = judge(COMMAND, [obs("command", body="command: make db-migrate ENV=dev VERBOSE=1")], None)
    assert (ran.outcome, ran.evidence) == ("used", "ran make db-migrate ENV=dev VERBOSE=1")
    quoted = judge(MEMORY, [obs("command", body="command: pytest tests/test_exports.py")], None)
    assert quoted.outcome == "used"
    unrelated = judge(COMMAND, [obs("command", body="command: make lint")], None)
    assert unrelated.outcome == "ignored"


def test_an_answer_that_repeats_it_is_use() -> None:
    by_name = judge(MEMORY, [], "I set DEFAULT_CHARSET back to utf-8-sig.")
    assert (by_name.outcome, by_name.evidence) == ("used", "the answer says DEFAULT_CHARSET")
    by_words = judge(MEMORY, [], "The exports carry a BOM so they stay UTF-8 for Excel.")
    assert by_words.outcome == "used"
    vague = judge(MEMORY, [], "Done, the exports look fine.")
    assert vague.outcome == "ignored" and vague.evidence == "not acted on in the turn"


def test_a_correcting_prompt_names_what_it_corrects() -> None:
    assert corrects("No, exports are plain UTF-8 now, no BOM", MEMORY) == "exports, utf-8, bom"
    assert corrects("No, use the staging database", MEMORY) is None  # another subject
    assert corrects("Exports should have a BOM, right?", MEMORY) is None  # no correction


def test_paths_and_commands_compare_loosely_but_not_blindly() -> None:
    assert same_file("src/app.py", "app.py") and same_file("./app.py", "app.py")
    assert not same_file("src/myapp.py", "app.py")
    assert same_command("pytest -x tests/test_api.py", "pytest tests/test_api.py")
    assert not same_command("pytest tests/test_api.py", "npm test")
