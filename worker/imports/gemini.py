"""Gemini CLI's chat files as the hook events Gemini CLI would have fired (`cairn import gemini`).

Gemini CLI keeps each session in `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`
($GEMINI_CLI_HOME instead of the home folder when set), and the project's folder in
`~/.gemini/tmp/<project>/.project_root`. Read here, as recorded by Gemini CLI 0.61 (docs/agents.md;
the format is described in hooks/cairn_hook_gemini.py): the first line's session id and start,
each user prompt, each completed tool call (name, arguments, the result sent to the model, its
status) and the model's answers. Each becomes the payload Gemini CLI's hook would have received,
turned into Claude Code's shape by the live hooks' own adapter (hooks/cairn_hook_agents.py) with
the ids the live hooks give (hooks/cairn_hook_gemini.py), so a session recorded live and imported
later is stored once. A session in an older one-object `.json` file is read whole.

Folders named by a hash of the project (Gemini CLI before 0.2x) hold no `.project_root`: their
project cannot be known, so they are skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from worker.imports.claude_code import HookEvent, SessionFiles, time_ms
from worker.imports.hook_builder import load_hook_modules
from worker.imports.transcript import NO_SESSION, Line, Skips

PROJECT_ROOT_FILE = ".project_root"
NO_PROJECT = "no project folder (.project_root)"


def tmp_dir(env: dict[str, str] | None = None) -> Path:
    """Where Gemini CLI keeps its per-project folders ($GEMINI_CLI_HOME or ~, then .gemini/tmp)."""
    env = dict(os.environ) if env is None else env
    home = env.get("GEMINI_CLI_HOME") or os.path.expanduser("~")
    return Path(home) / ".gemini" / "tmp"


def project_root(chats: Path) -> str:
    """The project folder Gemini CLI recorded beside a chats folder ('' when none)."""
    try:
        return (chats.parent / PROJECT_ROOT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def discover(root: Path) -> list[SessionFiles]:
    """Every main session's chat file under `root` (subagents' files sit in a folder of their
    parent's and are not sessions of their own)."""
    out: list[SessionFiles] = []
    try:
        folders = sorted(p for p in root.iterdir() if (p / "chats").is_dir())
    except OSError:
        return []
    for folder in folders:
        chats = folder / "chats"
        try:
            files = sorted(chats.glob("session-*.json*"))
        except OSError:
            continue
        for path in files:
            if path.is_file() and path.suffix in (".json", ".jsonl"):
                out.append(SessionFiles(path.stem, chats, main=path))
    return out


def _response(call: dict[str, Any]) -> dict[str, Any]:
    """The `tool_response` AfterTool carried: what the model was sent back, and the error."""
    output, error = "", None
    for part in call.get("result") or []:
        answer = part.get("functionResponse") if isinstance(part, dict) else None
        body = answer.get("response") if isinstance(answer, dict) else None
        if isinstance(body, dict):
            if isinstance(body.get("output"), str):
                output = body["output"]
            if isinstance(body.get("error"), str):
                error = body["error"]
    response: dict[str, Any] = {"llmContent": output or error or ""}
    display = call.get("resultDisplay")
    if isinstance(display, str):
        response["returnDisplay"] = display
    if call.get("status") == "error" and (error or output):
        response["error"] = {"message": error or output}
    return response


class ChatEvents:
    """Turns one chat file's records into hook events, in order."""

    agent = "gemini"

    def __init__(self, path: Path, skips: Skips, *, agent: bool = False) -> None:
        mods = load_hook_modules()
        self.ids = mods["cairn_hook_gemini"]
        self.adapter = mods["cairn_hook_agents"]
        self.tally = self.ids.Tally()
        self.path = str(path)
        self.skips = skips
        self.cwd = project_root(path.parent)
        self.session_id = ""
        self.answer = ""
        self.turn = ""
        self.last_at = 0
        self.unreadable = False  # no session id or no project: the file is skipped, counted once

    def base(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "cwd": self.cwd}

    def _event(self, name: str, payload: dict[str, Any], at: int, end: int) -> HookEvent:
        native = {**self.base(), **payload}
        return HookEvent(name, self.adapter.translate("gemini", name, native), at, self.path, end)

    def events(self, lines: Iterable[Line]) -> Iterator[HookEvent]:
        if self.path.endswith(".json"):  # an older version's one object
            lines = self._whole()
        end = 0
        for line in lines:
            end = line.end
            yield from self._record(line.record, end)
        yield from self._stop(end)

    def _whole(self) -> Iterator[Line]:
        try:
            with open(self.path, encoding="utf-8") as f:
                doc = json.load(f)
            size = os.path.getsize(self.path)
        except (OSError, ValueError):
            return
        if not isinstance(doc, dict):
            return
        meta = {k: v for k, v in doc.items() if k != "messages"}
        yield Line(0, size, meta)
        for message in doc.get("messages") or []:
            if isinstance(message, dict):
                yield Line(0, size, message)

    def _record(self, record: dict[str, Any], end: int) -> Iterator[HookEvent]:
        if self.unreadable:
            return
        if not self.session_id:
            sid = record.get("sessionId")
            if not isinstance(sid, str) or not sid or not self.cwd:
                self.skips.add(NO_PROJECT if sid and not self.cwd else NO_SESSION)
                self.unreadable = True
                return
            self.session_id = sid
            at = time_ms(record.get("startTime")) or 0
            self.last_at = at
            yield self._event("SessionStart", {"source": "startup"}, at, end)
            return
        at = time_ms(record.get("timestamp")) or self.last_at
        self.last_at = max(self.last_at, at)
        prompts, calls = self.tally.add(record)
        for prompt in prompts:
            yield from self._stop(end)
            self.turn = str(prompt.get("id") or "")
            text = self.ids.message_text(prompt)
            body = {"prompt": text, "prompt_id": self.ids.prompt_id(prompt["index"])}
            yield self._event("UserPromptSubmit", body, at, end)
        for call in calls:
            tool = {
                "tool_name": call.get("name"),
                "tool_input": call.get("args") if isinstance(call.get("args"), dict) else {},
                "tool_response": _response(call),
                "tool_use_id": self.ids.call_id(call["index"], call.get("name"), call.get("args")),
            }
            yield self._event("PostToolUse", tool, time_ms(call.get("timestamp")) or at, end)
        if record.get("type") == "gemini":
            text = self.ids.message_text(record)
            if text.strip():
                self.answer = text

    def _stop(self, end: int) -> Iterator[HookEvent]:
        """The turn's end (AfterAgent), when it had an answer."""
        if self.answer and self.session_id:
            body = {"stop_hook_active": False, "prompt_response": self.answer}
            event = self._event("Stop", body, self.last_at, end)
            event.key = self.turn
            yield event
        self.answer = ""

    def unpaired(self) -> int:
        return 0
