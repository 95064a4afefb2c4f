"""`cairn import claude-code` from transcripts to the requests it sends: each turn as the live
hooks would have stored it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from worker.imports.hook_builder import HookBuilder
from worker.imports.run import ClaudeCodeImport, Options
from worker.imports.state import ImportState

SID = "0b1c2d3e-aaaa-bbbb-cccc-000000000002"


@pytest.fixture
def builder() -> Iterator[HookBuilder]:
    made = HookBuilder()
    try:
        yield made
    finally:
        made.close()


def line(kind: str, content: object, second: int, **extra: object) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["stop_reason"] = "end_turn"
    return {
        "type": kind,
        "sessionId": SID,
        "cwd": extra.pop("cwd"),
        "timestamp": f"2026-01-02T03:04:{second:02d}.000Z",
        "uuid": f"u-{second}",
        "message": message,
        **extra,
    }


def said(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def imported(root: Path, tmp_path: Path, builder: HookBuilder) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    def send(batch: list[dict[str, Any]]) -> dict[str, Any]:
        sent.extend(batch)
        return {"stored": len(batch)}

    state = ImportState(tmp_path / "state.json")
    ClaudeCodeImport(Options(root=root), state, builder, send).run()
    return sent


def test_each_turn_of_a_session_keeps_its_answer_and_the_session_one_summary(
    tmp_path: Path, builder: HookBuilder
) -> None:
    # Two turns, as when a background agent's notice starts a second turn after the first
    # ended: the live Stop hook stored an answer at the end of each.
    project = tmp_path / "project"
    project.mkdir()
    cwd = str(project)
    root = tmp_path / "projects"
    (root / "-project").mkdir(parents=True)
    lines = [
        line("user", "who calls calc.add?", 1, cwd=cwd, promptId="p1"),
        line("assistant", said("calc.add is called from check_calc.py only."), 2, cwd=cwd),
        line("user", "and what does it return?", 3, cwd=cwd, promptId="p2"),
        line("assistant", said("It returns the sum of its two arguments."), 4, cwd=cwd),
    ]
    (root / "-project" / f"{SID}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    sent = imported(root, tmp_path, builder)

    answers = {
        r["body"]["event_id"]: r["body"]["title"]
        for r in sent
        if r["path"] == "/api/observations" and r["body"].get("type") == "answer"
    }
    # Named by their prompts, as the live hook names them (so a live session is not stored twice).
    assert answers == {
        f"cc:{SID}:answer:p1": "calc.add is called from check_calc.py only.",
        f"cc:{SID}:answer:p2": "It returns the sum of its two arguments.",
    }
    summaries = [r for r in sent if r["path"].endswith("/summarize")]
    assert len(summaries) == 1
    assert summaries[0]["body"]["last_assistant_message"].startswith("It returns the sum")
