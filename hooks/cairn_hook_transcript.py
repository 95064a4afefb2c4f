"""The agent's closing message from the session transcript, for a Stop event that lacks it.

Claude Code builds before `last_assistant_message` was added to the Stop payload still write the
turn to the transcript (JSON lines, `transcript_path`) before the hook runs. Only the file's tail
is read: the last assistant record with text is the turn's answer. Any failure gives ''.
"""

from __future__ import annotations

import json
import os

TAIL_BYTES = 256 * 1024


def tail_lines(path: object) -> list[str]:
    """The whole lines in the last TAIL_BYTES of a JSON-lines transcript ([] when unreadable)."""
    if not isinstance(path, str) or not path:
        return []
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read(TAIL_BYTES)
    except OSError:
        return []
    lines = tail.decode("utf-8", errors="replace").splitlines()
    if len(tail) == TAIL_BYTES and lines:
        lines = lines[1:]  # the first line may be cut
    return lines


def last_assistant_text(path: object, limit: int) -> str:
    """The text of the transcript's last assistant message with text, at most `limit` chars."""
    for line in reversed(tail_lines(path)):
        if '"assistant"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        text = _text(record)
        if text:
            return text[:limit]
    return ""


def _text(record: object) -> str:
    if not isinstance(record, dict) or record.get("type") != "assistant":
        return ""
    if record.get("isSidechain") is True:
        return ""  # a subagent's turn, not the session's answer
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(p for p in parts if p.strip())
