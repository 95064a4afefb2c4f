"""The session plan from Claude Code's task tools, fed the payloads the real CLI sends (2.1.197
and 2.1.332 send the same shapes; recorded in ../shared/claude-code-hooks.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.hook_modules import tasks


def call(tool: str, tin: dict[str, Any], resp: Any, session: str = "s-1") -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tin,
        "tool_response": resp,
    }


CREATE_1 = call(
    "TaskCreate",
    {"subject": "Fix the parser", "description": "Empty input", "activeForm": "Fixing the parser"},
    {"task": {"id": "1", "subject": "Fix the parser", "description": "Empty input"}},
)
CREATE_2 = call(
    "TaskCreate",
    {"subject": "Add a test", "description": "Cover empty input"},
    {"task": {"id": "2", "subject": "Add a test"}},
)
START_1 = call(
    "TaskUpdate",
    {"taskId": "1", "status": "in_progress"},
    {"success": True, "taskId": "1", "statusChange": {"from": "pending", "to": "in_progress"}},
)
DONE_1 = call(
    "TaskUpdate",
    {"taskId": "1", "status": "completed"},
    {"success": True, "taskId": "1", "statusChange": {"from": "in_progress", "to": "completed"}},
)


def test_creates_and_updates_build_the_plan(tmp_path: Path) -> None:
    home = str(tmp_path)
    plans = [tasks.session_plan(home, p, 200) for p in (CREATE_1, CREATE_2, START_1, DONE_1)]
    assert plans[-1] == [
        {"content": "Fix the parser", "status": "completed", "activeForm": "Fixing the parser"},
        {"content": "Add a test", "status": "pending"},
    ]
    assert plans[2] is not None and plans[2][0]["status"] == "in_progress"


def test_task_list_is_a_snapshot_and_unchanged_plans_send_nothing(tmp_path: Path) -> None:
    home = str(tmp_path)
    tasks.session_plan(home, CREATE_1, 200)
    listing = call(
        "TaskList",
        {},
        {
            "tasks": [
                {"id": "1", "subject": "Fix the parser", "status": "in_progress"},
                {"id": "7", "subject": "Made elsewhere", "status": "pending"},
            ]
        },
    )
    plan = tasks.session_plan(home, listing, 200)
    assert plan == [
        {"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing the parser"},
        {"content": "Made elsewhere", "status": "pending"},
    ]
    assert tasks.session_plan(home, listing, 200) is None  # nothing changed: no PUT


def test_deleted_and_failed_updates_and_sessions_apart(tmp_path: Path) -> None:
    home = str(tmp_path)
    tasks.session_plan(home, CREATE_1, 200)
    tasks.session_plan(home, CREATE_2, 200)
    failed = call("TaskUpdate", {"taskId": "2", "status": "completed"}, {"success": False})
    assert tasks.session_plan(home, failed, 200) is None
    deleted = call("TaskUpdate", {"taskId": "1", "status": "deleted"}, {"success": True})
    assert tasks.session_plan(home, deleted, 200) == [
        {"content": "Add a test", "status": "pending"}
    ]
    other = dict(CREATE_1, session_id="s-2")
    assert tasks.session_plan(home, other, 200) == [
        {"content": "Fix the parser", "status": "pending", "activeForm": "Fixing the parser"}
    ]
    tasks.forget_session(home, "s-1")
    assert tasks.session_plan(home, START_1, 200) == [
        {"content": "Task #1", "status": "in_progress"}
    ]


def test_bad_shapes_change_nothing(tmp_path: Path) -> None:
    home = str(tmp_path)
    for payload in (
        call("TaskCreate", {}, None),
        call("TaskCreate", {"subject": "x"}, {"task": {"id": True}}),
        call("TaskUpdate", "nope", []),  # type: ignore[arg-type]
        call("TaskList", {}, {"tasks": "nope"}),
        {"tool_name": "TaskCreate"},
    ):
        assert tasks.session_plan(home, payload, 200) is None
    # A corrupt state file is started over, not a crash.
    tasks.session_plan(home, CREATE_1, 200)
    for state in Path(tasks.plan_folder(home)).iterdir():
        state.write_text("{not json")
    assert tasks.session_plan(home, CREATE_2, 200) == [
        {"content": "Add a test", "status": "pending"}
    ]
