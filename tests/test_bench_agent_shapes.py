"""bench/agent_shapes.py sends the corpus as Codex and Gemini CLI would; the hook's adapter
(hooks/cairn_hook_agents.py) must read back what Claude Code's shape said: the same files, the
same exit codes, the same closing message. Checked over every event of the corpus written in the
project (bench/data/coding-memory/: 24 projects)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.agent_shapes import as_agent
from tests.hook_modules import agents, events

CORPUS = Path(__file__).resolve().parents[1] / "bench" / "data" / "coding-memory"
ROOT = "/work/repo"


def corpus_events() -> list[dict[str, Any]]:
    found = []
    projects = [
        p for f in sorted(CORPUS.glob("*.json")) for p in json.loads(f.read_text())["projects"]
    ]
    for project in projects:
        for session in project["sessions"]:
            for n, event in enumerate(session["events"]):
                text = json.dumps(event).replace(project["root"], ROOT)
                found.append(
                    {
                        "session_id": f"s-{session['id']}",
                        "cwd": ROOT,
                        "tool_use_id": f"t{n}",
                        **json.loads(text),
                    }
                )
    return found


def code_of(obs: dict[str, Any]) -> str:
    body = str(obs["body"])
    return next((line for line in body.splitlines() if line.startswith("exit code:")), "")


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_what_the_agent_sends_reads_back_as_claude_code_s_event(agent: str, tmp_path: Path) -> None:
    checked = 0
    for payload in corpus_events():
        event = payload["hook_event_name"]
        if event == "CairnSaveMemory":  # the bench's own call to the API, not a hook event
            continue
        transcript = tmp_path / f"{payload['session_id']}.jsonl"
        shaped = as_agent(agent, payload, transcript)
        if shaped is None:
            continue
        shaped["transcript_path"] = str(transcript)
        native = agents.native_event(agent, shaped["hook_event_name"])
        assert native, shaped["hook_event_name"]
        back = agents.translate(agent, native, shaped)
        if event == "Stop":
            assert back["last_assistant_message"] == payload["last_assistant_message"]
        if event not in ("PostToolUse", "PostToolUseFailure"):
            continue
        mine = events.observation(back, ROOT, ROOT, 500, agent)
        theirs = events.observation(payload, ROOT, ROOT, 500)
        assert mine is not None and theirs is not None
        assert mine["files"] == theirs["files"] or payload["tool_name"] in ("Read", "Grep", "Glob")
        if payload["tool_name"] == "Bash":
            assert "(exit" in str(theirs["title"]) or code_of(theirs) in ("", "exit code: 0")
            failed = event == "PostToolUseFailure"
            assert ("(exit" in str(mine["title"])) == failed, (mine, payload)
        checked += 1
    assert checked > 500
