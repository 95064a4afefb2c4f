"""What a hook reads from an agent's own session file, for what its payload lacks.

Claude Code builds before `last_assistant_message` was added to the Stop payload still write the
turn to the transcript (JSON lines, `transcript_path`) before the hook runs: the last assistant
record with text is the turn's answer. Codex CLI's payload for a command has no exit code: its
rollout has it, by call id. Copilot CLI's Stop has no closing message: its events.jsonl has it.
Only the file's tail is read; any failure gives '' or None.
"""

from __future__ import annotations

import json
import os
import re

TAIL_BYTES = 256 * 1024
# Codex CLI's line for a command's exit in its tool output and rollout.
CODEX_EXIT = re.compile(r"^Process exited with code (-?\d+)\s*$", re.M)


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


# --------------------------------------------------------------------------- other agents' files
def codex_exit_code(path: object, call_id: object) -> int | None:
    """The exit code Codex recorded for the command `call_id` (its hook payload has none)."""
    if not isinstance(call_id, str) or not call_id:
        return None
    needle = json.dumps(call_id)
    for line in reversed(tail_lines(path)):
        if needle not in line or "exit" not in line:
            continue
        record = _record(line)
        payload = record.get("payload") if isinstance(record, dict) else None
        item = payload.get("item") if isinstance(payload, dict) else None
        if isinstance(item, dict) and item.get("id") == call_id:
            code = item.get("exit_code")
            if isinstance(code, int):
                return code
        if isinstance(payload, dict) and payload.get("call_id") == call_id:
            output = payload.get("output")
            match = CODEX_EXIT.search(output) if isinstance(output, str) else None
            if match:
                return int(match.group(1))
    return None


_COPILOT_TURN = ('"assistant.message"', '"user.message"', '"tool.execution_complete"')


def copilot_last_message(path: object, wait: float = 1.0) -> str:
    """The turn's closing message from Copilot CLI's events.jsonl: the last of its messages and
    tool results, when that is an assistant message with text. Copilot CLI writes the file
    behind the events: at agentStop the closing message may not be there yet, so the file is
    read again for up to `wait` seconds (never an older turn's answer instead)."""
    import time

    deadline = time.monotonic() + wait
    while True:
        lines = tail_lines(path)
        if not lines:
            return ""  # no transcript to wait for
        for line in reversed(lines):
            if not any(kind in line for kind in _COPILOT_TURN):
                continue
            record = _record(line)
            data = record.get("data") if isinstance(record, dict) else None
            if not isinstance(record, dict) or not isinstance(data, dict):
                continue
            content = data.get("content")
            if (
                record.get("type") == "assistant.message"
                and isinstance(content, str)
                and content.strip()
                and not data.get("toolRequests")
            ):
                return content
            break  # the turn's answer is not written yet
        if time.monotonic() >= deadline:
            return ""
        time.sleep(0.1)


def _record(line: str) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return None
