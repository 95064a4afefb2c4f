"""The transcript reader on broken and hostile lines: skipped and counted, never raising, and a
line still being written left for the next import."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from worker.imports.claude_code import HookEvent, TranscriptEvents
from worker.imports.hook_builder import HookBuilder
from worker.imports.transcript import (
    BAD_JSON,
    NOT_OBJECT,
    NOT_UTF8,
    OVERSIZE,
    TRUNCATED,
    UNKNOWN_BLOCK,
    UNKNOWN_TYPE,
    Skips,
    read_lines,
)

SID = "0b1c2d3e-aaaa-bbbb-cccc-000000000001"


def rec(kind: str, content: object, **extra: object) -> dict[str, object]:
    role = "assistant" if kind == "assistant" else "user"
    return {
        "type": kind,
        "sessionId": SID,
        "cwd": "/tmp/project",
        "timestamp": "2026-01-02T03:04:05.000Z",
        "uuid": f"u-{len(json.dumps(content))}",
        "message": {"role": role, "content": content},
        **extra,
    }


def good_session() -> list[bytes]:
    lines = [
        rec("user", "fix the bug", promptId="p1"),
        rec(
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}],
        ),
        rec(
            "user",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            toolUseResult={"stdout": "ok", "stderr": "", "interrupted": False},
            promptId="p1",
        ),
        {
            **rec("assistant", [{"type": "text", "text": "Done."}]),
            "message": {
                "role": "assistant",
                "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "Done."}],
            },
        },
    ]
    return [json.dumps(line).encode() + b"\n" for line in lines]


BUILDER: list[HookBuilder] = []


def build(event: HookEvent) -> None:
    """Through the hooks' own builder too: what the reader lets pass must not break it."""
    if not BUILDER:
        BUILDER.append(HookBuilder())
    for request in BUILDER[0].build(event):
        json.dumps(request.body)


def events_of(data: bytes, max_line_bytes: int = 1 << 20) -> tuple[list[str], Skips, int]:
    skips = Skips()
    ends = [0]
    reader = TranscriptEvents(Path("t.jsonl"), skips)

    def lines():  # type: ignore[no-untyped-def]
        for line in read_lines(io.BytesIO(data), 0, skips, max_line_bytes=max_line_bytes):
            ends.append(line.end)
            yield line

    names = []
    for event in reader.events(lines()):
        build(event)
        names.append(event.name)
    return names, skips, ends[-1]


def test_a_clean_session_gives_the_hook_events() -> None:
    names, skips, end = events_of(b"".join(good_session()))
    assert names == ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"]
    assert skips.total() == 0
    assert end == len(b"".join(good_session()))


def test_each_kind_of_bad_line_is_skipped_and_counted_by_reason() -> None:
    good = good_session()
    bad = [
        b'{"type": "user", "message": \n',  # not JSON
        b"\xff\xfe not utf-8 \xc3\x28\n",
        b"[1, 2, 3]\n",
        json.dumps({"type": "brand-new-line-type", "sessionId": SID}).encode() + b"\n",
        json.dumps(rec("assistant", [{"type": "hologram", "data": 1}])).encode() + b"\n",
        b'{"type": "user", "message": {"content": "' + b"x" * 5000 + b'"}}\n',  # too long
    ]
    data = good[0] + b"".join(bad) + b"".join(good[1:]) + b'{"type": "assistant", "mess'
    names, skips, end = events_of(data, max_line_bytes=4096)
    assert names == ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"]
    assert dict(skips.counts) == {
        BAD_JSON: 1,
        NOT_UTF8: 1,
        NOT_OBJECT: 1,
        UNKNOWN_TYPE: 1,
        UNKNOWN_BLOCK: 1,
        OVERSIZE: 1,
        TRUNCATED: 1,
    }
    # The unfinished last line is not passed: the next import reads it once it is complete.
    assert end == len(data) - len(b'{"type": "assistant", "mess')


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["user", "assistant", "attachment", "system", "x"]) | JSONISH,
        "sessionId": st.sampled_from([SID, ""]) | JSONISH,
        "cwd": st.sampled_from(["/tmp/p", ""]) | JSONISH,
        "timestamp": st.sampled_from(["2026-01-02T03:04:05Z", "yesterday"]) | JSONISH,
        "message": JSONISH
        | st.fixed_dictionaries(
            {"content": JSONISH | st.lists(st.dictionaries(st.text(max_size=10), JSONISH))}
        ),
        "toolUseResult": JSONISH,
        "attachment": JSONISH,
        "promptId": JSONISH,
        "isMeta": JSONISH,
    },
)
LINE = (
    FIELDS.map(lambda d: json.dumps(d).encode())
    | st.binary(max_size=200)
    | st.sampled_from([b"{", b"null", b'"str"', b"[" * 5000 + b"]" * 5000, b"\x00\x00"])
)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(LINE, max_size=12), st.booleans())
def test_hostile_lines_never_raise(lines: list[bytes], cut_last: bool) -> None:
    data = b"\n".join(line.replace(b"\n", b" ") for line in lines) + (b"" if cut_last else b"\n")
    good = b"".join(good_session())
    names, skips, end = events_of(data + good if not cut_last else good + data)
    assert end <= len(data) + len(good)
    assert skips.total() >= 0
    if not cut_last:
        # The good session after the garbage still comes through whole.
        assert names[-3:] == ["UserPromptSubmit", "PostToolUse", "Stop"]
