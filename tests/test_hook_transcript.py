"""The closing message read from the transcript when a Stop payload lacks it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hook_modules import transcript


def line(kind: str, *blocks: dict[str, object], **extra: object) -> str:
    return json.dumps({"type": kind, "message": {"content": list(blocks)}, **extra})


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


def test_the_last_assistant_text_is_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join(
            [
                line("user", text("fix calc.add")),
                line("assistant", text("Let me look."), {"type": "tool_use", "id": "t1"}),
                line("user", {"type": "tool_result", "tool_use_id": "t1"}),
                line("assistant", text("Fixed calc.add:"), text("it added one too many.")),
                line("assistant", text("subagent notes"), isSidechain=True),
                '{"type": "system", "subtype": "stop_hook_summary"}',
                "{not json",
            ]
        )
        + "\n"
    )
    assert transcript.last_assistant_text(str(path), 1000) == (
        "Fixed calc.add:\nit added one too many."
    )
    assert transcript.last_assistant_text(str(path), 5) == "Fixed"


def test_no_transcript_or_no_answer_gives_nothing(tmp_path: Path) -> None:
    assert transcript.last_assistant_text(str(tmp_path / "missing.jsonl"), 100) == ""
    assert transcript.last_assistant_text(None, 100) == ""
    only_tools = tmp_path / "tools.jsonl"
    only_tools.write_text(line("assistant", {"type": "tool_use", "id": "t"}) + "\n")
    assert transcript.last_assistant_text(str(only_tools), 100) == ""


def test_a_huge_transcript_is_read_from_its_tail(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    filler = line("user", text("x" * 1000))
    path.write_text("\n".join([filler] * 2000 + [line("assistant", text("The end."))]) + "\n")
    assert transcript.last_assistant_text(str(path), 100) == "The end."
