"""Gemini CLI chat files (the shapes Gemini CLI 0.61 writes) as hook events, with the ids the
live hooks give the same prompts and tool calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.hook_modules import agents, gemini
from worker.imports.gemini import NO_PROJECT, ChatEvents, discover, tmp_dir
from worker.imports.transcript import Skips, read_lines

SID = "80cb76e7-bbe6-4825-8e18-7cd1ad941e3d"
AT = "2026-12-07T03:43:35.571Z"


def _call(cid: str, command: str, output: str, status: str = "success") -> dict[str, Any]:
    key = "error" if status == "error" else "output"
    return {
        "id": cid,
        "name": "run_shell_command",
        "args": {"command": command, "description": command},
        "result": [
            {
                "functionResponse": {
                    "id": cid,
                    "name": "run_shell_command",
                    "response": {key: output},
                }
            }
        ],
        "status": status,
        "timestamp": AT,
    }


def _gemini(mid: str, content: str = "", calls: list[dict[str, Any]] | None = None) -> str:
    record: dict[str, Any] = {"id": mid, "timestamp": AT, "type": "gemini", "content": content}
    if calls is not None:
        record["toolCalls"] = calls
    return json.dumps(record, separators=(",", ":"))


def _user(mid: str, text: str) -> str:
    record = {"id": mid, "timestamp": AT, "type": "user", "content": [{"text": text}]}
    return json.dumps(record, separators=(",", ":"))


def _result(mid: str, cid: str) -> str:  # a tool's result sent back: not a prompt
    parts = [{"functionResponse": {"id": cid, "name": "run_shell_command", "response": {}}}]
    return json.dumps({"id": mid, "timestamp": AT, "type": "user", "content": parts})


FAIL = _call(
    "c1", "python3 check.py", "Output: AssertionError\nExit Code: 1\nProcess Group PGID: 9"
)
LS = _call("c2", "ls", "Output: calc.py")
AGAIN = _call("c3", "python3 check.py", "Output: ok\nProcess Group PGID: 10")
DENIED = _call("c4", "rm -rf /", "Command rejected by policy", status="error")
SET = {"$set": {"messages": [{"id": "ctx", "type": "user", "content": [{"text": "<session_"}]}]}}
CHAT = [
    json.dumps({"sessionId": SID, "projectHash": "ab", "startTime": AT, "kind": "main"}),
    json.dumps(SET),
    _user("u1", "check.py fails, please fix calc.add"),
    json.dumps({"$set": {"lastUpdated": AT}}),
    _gemini("g1"),
    _gemini("g1", calls=[FAIL, LS]),  # two calls run in parallel: one batch
    _result("r1", "c1"),
    _gemini("g2", calls=[AGAIN]),  # the same command again: its own id
    _gemini("g3", "Fixed calc.add; check.py passes."),
    _user("u2", "now remove everything"),
    _gemini("g4", calls=[DENIED]),
    _gemini("g5", "I won't do that."),
    "{broken",
]


def _write(tmp_path: Path, lines: list[str], root: str | None = "/src/app") -> Path:
    folder = tmp_path / "tmp" / "app"
    (folder / "chats").mkdir(parents=True)
    if root is not None:
        (folder / ".project_root").write_text(root + "\n")
    path = folder / "chats" / "session-2026-12-07T03-43-80cb76e7.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _events(path: Path, skips: Skips | None = None) -> list[Any]:
    skips = skips or Skips()
    with path.open("rb") as handle:
        return list(ChatEvents(path, skips).events(read_lines(handle, 0, skips)))


def test_a_chat_file_becomes_the_hook_events_gemini_cli_fires(tmp_path: Path) -> None:
    path = _write(tmp_path, CHAT)
    (found,) = discover(tmp_path / "tmp")
    assert found.main == path
    skips = Skips()
    events = _events(path, skips)
    assert [e.name for e in events] == [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUse",
        "PostToolUse",
        "Stop",
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
    ]
    start, first, fail, ls, again, stop, second, denied, last = (e.payload for e in events)
    assert start["session_id"] == SID and start["cwd"] == "/src/app"
    assert first["prompt"] == "check.py fails, please fix calc.add"
    assert (first["prompt_id"], second["prompt_id"]) == ("gemini:0", "gemini:1")
    # In Claude Code's shape, by the live hooks' own adapter.
    assert fail["tool_name"] == "Bash" and fail["tool_input"]["command"] == "python3 check.py"
    assert fail["tool_response"]["exit_code"] == 1
    assert again["tool_response"] == {"stdout": "ok", "exit_code": 0}
    assert denied["error"] == "Command rejected by policy"
    ids = [fail["tool_use_id"], ls["tool_use_id"], again["tool_use_id"]]
    assert len(set(ids)) == 3 and ids[0].startswith("gemini:0:") and ids[2].startswith("gemini:2:")
    assert stop["last_assistant_message"] == "Fixed calc.add; check.py passes."
    assert last["last_assistant_message"] == "I won't do that."
    assert skips.total() == 1  # the broken line


def test_each_id_is_the_one_the_live_hook_gives(tmp_path: Path) -> None:
    """Gemini CLI records a prompt after BeforeAgent and a tool call after AfterTool: the live
    hook, reading the file as it was then, names each as the import does."""
    path = _write(tmp_path, CHAT)
    lines = path.read_bytes().splitlines(keepends=True)
    for event in _events(path):
        if event.name not in ("UserPromptSubmit", "PostToolUse"):
            continue
        ends = [sum(len(x) for x in lines[: i + 1]) for i in range(len(lines))]
        before = lines[: ends.index(event.end)]  # the file up to the line that recorded it
        partial = tmp_path / "partial.jsonl"
        partial.write_bytes(b"".join(before))
        raw = json.loads(lines[ends.index(event.end)])
        if event.name == "UserPromptSubmit":
            native = {"prompt": raw["content"][0]["text"]}
        else:
            call = _matching(raw["toolCalls"], event.payload)
            native = {"tool_name": call["name"], "tool_input": call["args"], "tool_response": {}}
        live = agents.translate(
            "gemini",
            event.name,
            {"session_id": SID, "transcript_path": str(partial), "cwd": "/src/app", **native},
        )
        key = "prompt_id" if event.name == "UserPromptSubmit" else "tool_use_id"
        assert live[key] == event.payload[key], event.name


def _matching(calls: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any]:
    command = payload["tool_input"]["command"]
    return next(c for c in calls if c["args"]["command"] == command)


def test_a_live_hook_without_a_readable_chat_file_keeps_its_usual_ids(tmp_path: Path) -> None:
    prompt = {"session_id": SID, "cwd": "/src/app", "prompt": "hi"}
    assert "prompt_id" not in agents.translate("gemini", "UserPromptSubmit", prompt)
    gone = {**prompt, "transcript_path": str(tmp_path / "missing.jsonl")}
    assert "prompt_id" not in agents.translate("gemini", "UserPromptSubmit", gone)
    assert gemini.counts(str(tmp_path)) is None  # a folder, not a file
    # A file of another shape (no session line first): counting there would give every prompt
    # of the session the same id, so the hook keeps its usual ids.
    other = tmp_path / "claude.jsonl"
    other.write_text('{"type":"user","uuid":"a"}\n{"type":"user","uuid":"b"}\n')
    assert gemini.counts(str(other)) is None
    assert "prompt_id" not in agents.translate(
        "gemini", "UserPromptSubmit", {**prompt, "transcript_path": str(other)}
    )


def test_an_older_one_object_chat_file_is_read_whole(tmp_path: Path) -> None:
    folder = tmp_path / "tmp" / "app" / "chats"
    folder.mkdir(parents=True)
    (folder.parent / ".project_root").write_text("/src/app")
    doc = {
        "sessionId": SID,
        "startTime": AT,
        "messages": [json.loads(_user("u1", "fix it")), json.loads(_gemini("g1", "Done."))],
    }
    path = folder / "session-2025-06-01T10-00-80cb76e7.json"
    path.write_text(json.dumps(doc, indent=2))
    assert [e.name for e in _events(path)] == ["SessionStart", "UserPromptSubmit", "Stop"]


def test_a_chat_whose_project_is_unknown_is_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path, CHAT, root=None)  # a hash-named folder of an older Gemini CLI
    skips = Skips()
    assert _events(path, skips) == []
    assert skips.counts[NO_PROJECT] == 1  # once for the file, not once a line


def test_where_gemini_cli_keeps_its_chats() -> None:
    assert tmp_dir({"GEMINI_CLI_HOME": "/x/home"}) == Path("/x/home/.gemini/tmp")
    assert tmp_dir({}).parts[-2:] == (".gemini", "tmp")
    assert discover(Path("/nonexistent/for/sure")) == []
