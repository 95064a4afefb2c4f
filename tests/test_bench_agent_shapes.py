"""bench/agent_shapes.py sends the corpus as Codex and Gemini CLI would; the hook's adapter
(hooks/cairn_hook_agents.py) must read back what Claude Code's shape said: the same files, the
same exit codes, the same closing message. Checked over every event of the corpus written in the
project (bench/data/coding-memory/: 24 projects)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.agent_shapes import as_agent, recorded
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
        # A read or search by shell (Codex) is recorded as the Read/Grep/Glob it is, with the
        # file it names, where Claude Code's command named only the files that exist.
        research = ("Read", "Grep", "Glob")
        assert (
            mine["files"] == theirs["files"]
            or payload["tool_name"] in research
            or back["tool_name"] in research
        )
        if payload["tool_name"] == "Bash":
            assert "(exit" in str(theirs["title"]) or code_of(theirs) in ("", "exit code: 0")
            failed = event == "PostToolUseFailure"
            assert ("(exit" in str(mine["title"])) == failed, (mine, payload)
        checked += 1
    assert checked > 500


def test_gemini_s_chat_file_gives_each_prompt_and_tool_call_of_a_session_its_own_id(
    tmp_path: Path,
) -> None:
    """Replayed as Gemini CLI (its chat file written after each hook, as the CLI does), the
    hook's adapter names the prompts of a session in order and no two tool calls alike."""
    prompts: dict[str, list[str]] = {}
    calls: dict[str, list[str]] = {}
    for payload in corpus_events():
        if payload["hook_event_name"] == "CairnSaveMemory":
            continue
        sid = payload["session_id"]
        shaped = as_agent("gemini", payload, tmp_path / f"{sid}.jsonl")
        if shaped is None:
            continue
        back = agents.translate(
            "gemini", agents.native_event("gemini", shaped["hook_event_name"]), shaped
        )
        if "prompt_id" in back:
            prompts.setdefault(sid, []).append(str(back["prompt_id"]))
        if back["hook_event_name"] in ("PostToolUse", "PostToolUseFailure"):
            calls.setdefault(sid, []).append(str(back["tool_use_id"]))
        recorded("gemini", shaped)
    assert sum(map(len, prompts.values())) > 50 and sum(map(len, calls.values())) > 500
    for ids in prompts.values():
        assert ids == [f"gemini:{n}" for n in range(len(ids))]
    for ids in calls.values():
        assert len(set(ids)) == len(ids)
