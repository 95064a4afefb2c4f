"""A scripted local stand-in for Anthropic's Messages API, for driving the real `claude` CLI.

Each agent-loop request (one that offers tools) is answered with the next turn of the script;
requests without tools (titles, summaries, compaction) get a short text without consuming a
turn. Every answer streams the event sequence the CLI needs (message_start, content blocks,
message_delta, message_stop), and every request body is recorded for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.loopback import Loopback


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any]


Block = Text | ToolUse
Turn = Sequence[Block]


@dataclass
class Recorded:
    method: str
    path: str
    body: dict[str, Any]

    @property
    def agent_loop(self) -> bool:
        return bool(self.body.get("tools"))

    def text(self) -> str:
        """Everything the model was shown: system prompt and every message, as one string."""
        return json.dumps(
            {"system": self.body.get("system"), "messages": self.body.get("messages")}
        )


def _asks_for_summary(body: dict[str, Any]) -> bool:
    """A compaction request: the CLI asks for a detailed <summary> of the conversation (tools
    offered). Its words, not the tag alone: a background agent's <task-notification> holds a
    <summary> of its own, and is a turn of the session like any prompt."""
    messages = body.get("messages") or []
    last = json.dumps(messages[-1]) if messages else ""
    return "<summary>" in last and "detailed summary of the conversation" in last


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(turn: Turn, model: str, message_id: str) -> list[bytes]:
    """The streamed answer for one turn: text blocks and tool_use blocks in order."""
    events = [
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    stop_reason = "end_turn"
    for index, block in enumerate(turn):
        if isinstance(block, Text):
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block.text}
        else:
            stop_reason = "tool_use"
            start = {
                "type": "tool_use",
                "id": f"toolu_{message_id}_{index}",
                "name": block.name,
                "input": {},
            }
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.input)}
        events.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        events.append(
            _event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        )
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    events.append(_event("message_stop", {"type": "message_stop"}))
    return events


@dataclass
class MessagesAPI(Loopback):
    """Serve on 127.0.0.1:<free port> in a thread; `script(turns)` queues the next session's turns."""

    side_answer: str = (
        "<analysis>The conversation so far.</analysis>\n<summary>\n"
        "1. Primary Request and Intent:\n   Fix calc.add.\n\n"
        "7. Pending Tasks:\n   - Add a regression test for calc.add\n\n"
        "9. Optional Next Step:\n   Run check_calc.py once more.\n</summary>"
    )
    requests: list[Recorded] = field(default_factory=list)
    _turns: list[Turn] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _count: int = 0

    def script(self, turns: Sequence[Turn]) -> None:
        with self._lock:
            self._turns = list(turns)

    def agent_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.agent_loop]

    def _next(self, path: str, body: dict[str, Any]) -> tuple[Turn, str]:
        with self._lock:
            self.requests.append(Recorded("POST", path, body))
            self._count += 1
            message_id = f"msg_{self._count:04d}"
            if not body.get("tools") or _asks_for_summary(body):
                return [Text(self.side_answer)], message_id
            turn = self._turns.pop(0) if self._turns else [Text("Done.")]
            return turn, message_id

    def start(self) -> MessagesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:  # 2.1.197 probes `HEAD /` before the first call
                with api._lock:
                    api.requests.append(Recorded("HEAD", self.path, {}))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                turn, message_id = api._next(self.path, body if isinstance(body, dict) else {})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in stream_events(turn, str(body.get("model", "model")), message_id):
                    self.wfile.write(chunk)
                self.wfile.flush()
                self.close_connection = True

        self.serve(Handler)
        return self
