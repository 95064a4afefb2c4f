"""Gemini CLI's chat file: the ids its prompts and tool calls get, live and on import.

Gemini CLI's hook payloads name no prompt and no tool call (Codex and Claude Code do), so ids
are made from what its chat file (`transcript_path`, ~/.gemini/tmp/<project>/chats/
session-*.jsonl) holds when the hook runs: Gemini CLI records a prompt after BeforeAgent and a
tool call after AfterTool, so the live hook's count of what is already recorded is the place of
this one in the session. `cairn import gemini` (worker/imports/gemini.py) counts the same way
line by line, so a session recorded live and imported later is stored once.

The file, as Gemini CLI 0.61 writes it: JSON lines, the first the session's metadata; each
message is appended again whenever it changes (same `id`, the later copy wins); `$set` lines
update the metadata (one sets the session's opening context as a user message: not a prompt, and
not counted). Older versions wrote one JSON object with `messages`. Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator

# Past this size the file is not read at a hook (a hook must stay quick): ids fall back to the
# hooks' usual ones, and an import of that session may then store its calls twice.
MAX_BYTES = 32 * 1024 * 1024


def prompt_id(index: int) -> str:
    return f"gemini:{index}"


def call_id(index: int, name: object, args: object) -> str:
    """A tool call's id: its batch's place in the session and what was called (the calls of
    one batch run in parallel and are recorded together)."""
    text = json.dumps([name, args], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"gemini:{index}:{hashlib.sha1(text.encode('utf-8')).hexdigest()[:12]}"


def message_text(message: dict[str, object]) -> str:
    """A message's text: a prompt's or an answer's ('' for a tool result sent back to the
    model)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [p for p in content if isinstance(p, dict)]
    if any("functionResponse" in p for p in parts):
        return ""
    return "\n".join(str(p["text"]) for p in parts if isinstance(p.get("text"), str))


class Tally:
    """Prompts and tool calls recorded so far, each counted once however often re-appended."""

    def __init__(self) -> None:
        self.prompts: set[str] = set()
        self.calls: set[str] = set()

    def add(self, record: object) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        """Take one record: the prompts and tool calls it adds (each with its index)."""
        prompts: list[dict[str, object]] = []
        calls: list[dict[str, object]] = []
        if not isinstance(record, dict):
            return prompts, calls
        kind, mid = record.get("type"), record.get("id")
        if (
            kind == "user"
            and isinstance(mid, str)
            and mid not in self.prompts
            and message_text(record).strip()
        ):
            prompts.append({**record, "index": len(self.prompts)})
            self.prompts.add(mid)
        batch = len(self.calls)
        for call in record.get("toolCalls") or [] if kind == "gemini" else []:
            cid = call.get("id") if isinstance(call, dict) else None
            if isinstance(cid, str) and cid not in self.calls:
                calls.append({**call, "index": batch})
                self.calls.add(cid)
        return prompts, calls


def is_session(record: object) -> bool:
    """Whether `record` is a Gemini CLI chat's opening line (its session's metadata)."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("sessionId"), str)
        and "type" not in record
    )


def records(path: str) -> Iterator[object]:
    """The file's records in order (one JSON file of an older version: its messages). A file
    that does not open with a session's metadata is not Gemini CLI's chat: ValueError."""
    with open(path, encoding="utf-8", errors="replace") as f:
        if path.endswith(".json"):
            doc = json.load(f)
            if not is_session(doc):
                raise ValueError("not a Gemini CLI chat")
            yield from doc.get("messages") or []
            return
        if not is_session(json.loads(f.readline() or "null")):
            raise ValueError("not a Gemini CLI chat")
        for line in f:
            if '"type":"user"' not in line and '"toolCalls"' not in line:
                continue  # neither a prompt nor a tool call: not parsed (the hook's time)
            try:
                yield json.loads(line)
            except ValueError:
                continue


def counts(path: object) -> tuple[int, int] | None:
    """(prompts, tool calls) recorded in the chat file at `path` so far; None when it is
    unreadable or not a chat file of Gemini CLI's (the hook then keeps its usual ids: counting
    in a file of another shape would give every prompt of the session the same id)."""
    if not isinstance(path, str) or not path:
        return None
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        tally = Tally()
        for record in records(path):
            tally.add(record)
    except (OSError, ValueError):
        return None
    return len(tally.prompts), len(tally.calls)


def name_ids(event: str, out: dict[str, object]) -> None:
    """Give a live Gemini CLI event, in its own shape, the id its import will give it."""
    if event not in ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure"):
        return
    found = counts(out.get("transcript_path"))
    if found is None:
        return
    prompts, calls = found
    if event == "UserPromptSubmit":
        out.setdefault("prompt_id", prompt_id(prompts))
    else:
        out.setdefault("tool_use_id", call_id(calls, out.get("tool_name"), out.get("tool_input")))
