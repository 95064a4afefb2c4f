"""Codex CLI rollout lines (the shapes Codex CLI 0.169.0 writes) as hook events."""

from __future__ import annotations

import json
from pathlib import Path

from worker.imports.codex import RolloutEvents, discover, sessions_dir
from worker.imports.transcript import Skips, read_lines

SID = "01a24df0-d9d6-7070-8a7a-8457e0aae4ff"


def line(kind: str, payload: dict[str, object], at: str = "2026-12-07T00:39:20.213Z") -> str:
    return json.dumps({"timestamp": at, "ordinal": 1, "type": kind, "payload": payload})


def item(item: dict[str, object]) -> str:
    return line("event_msg", {"type": "item_completed", "turn_id": "T1", "item": item})


ROLLOUT = [
    line("session_meta", {"id": SID, "cwd": "/src/app", "cli_version": "0.169.0"}),
    line("turn_context", {"turn_id": "T1", "cwd": "/src/app"}),
    line("response_item", {"type": "message", "role": "user", "content": []}),
    item({"type": "UserMessage", "content": [{"type": "text", "text": "fix calc.add"}]}),
    item(
        {
            "type": "CommandExecution",
            "id": "call_6",
            "command": ["/bin/bash", "-lc", "python3 check_calc.py"],
            "status": "failed",
            "aggregated_output": "AssertionError: add(2, 2) returned 5\n",
            "exit_code": 1,
        }
    ),
    item(
        {
            "type": "FileChange",
            "id": "call_9",
            "changes": {"/src/app/calc.py": {"type": "update"}, "/src/app/t.py": {"type": "add"}},
            "stdout": "Success.",
        }
    ),
    item({"type": "AgentMessage", "content": [{"type": "Text", "text": "Fixed calc.add."}]}),
    line("event_msg", {"type": "task_complete", "turn_id": "T1", "last_agent_message": None}),
    line("something_new", {"x": 1}),
    "{broken",
]


def test_a_rollout_becomes_the_hook_events_codex_fires(tmp_path: Path) -> None:
    path = tmp_path / "2026" / "12" / "07" / f"rollout-2026-12-07T00-39-19-{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(ROLLOUT) + "\n")
    (found,) = discover(tmp_path)
    assert found.session_id == SID and found.main == path
    skips = Skips()
    with path.open("rb") as handle:
        events = list(RolloutEvents(path, skips).events(read_lines(handle, 0, skips)))
    assert [e.name for e in events] == [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUse",
        "Stop",
    ]
    start, prompt, command, patch, stop = (e.payload for e in events)
    assert start == {"session_id": SID, "cwd": "/src/app", "source": "startup"}
    assert prompt["prompt"] == "fix calc.add" and prompt["prompt_id"] == "T1"
    assert command["tool_input"] == {"command": "python3 check_calc.py"}
    assert command["tool_response"]["exit_code"] == 1
    assert command["tool_use_id"] == "call_6"  # the live hook's id for the same call
    assert "*** Update File: /src/app/calc.py" in patch["tool_input"]["command"]
    assert "*** Add File: /src/app/t.py" in patch["tool_input"]["command"]
    assert stop["last_assistant_message"] == "Fixed calc.add."  # task_complete had none
    assert skips.total() == 2  # the unknown line type and the broken line


def test_where_codex_keeps_sessions() -> None:
    assert sessions_dir({"CODEX_HOME": "/x/codex"}) == Path("/x/codex/sessions")
    assert sessions_dir({}).name == "sessions"
    assert discover(Path("/nonexistent/for/sure")) == []
