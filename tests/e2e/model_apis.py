"""Scripted local stand-ins for the model APIs of Codex CLI, Gemini CLI and Copilot CLI.

One server per test, on 127.0.0.1, speaking the wire protocol its CLI uses (what each CLI really
called when driven offline, docs/agents.md): OpenAI's Responses API for Codex CLI (`POST
/v1/responses`, streamed events), Gemini's `POST /v1beta/models/<m>:streamGenerateContent?alt=sse`
for Gemini CLI (utility `:generateContent` calls get schema-shaped JSON), and OpenAI's Chat
Completions for Copilot CLI (`POST /v1/chat/completions`, streamed chunks). A script is a list of
steps; the step a request gets is the number of tool results already in it (every CLI sends the
whole conversation each time), so a session's requests walk the script in order and the next
session starts again at its first step. Every request body is recorded for the test to read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from tests.e2e.loopback import Loopback


@dataclass(frozen=True)
class Shell:
    """Run a shell command with the CLI's shell tool."""

    command: str
    description: str = ""


@dataclass(frozen=True)
class Patch:
    """Codex CLI's apply_patch (`*** Begin Patch` text)."""

    text: str


@dataclass(frozen=True)
class Say:
    """The final answer."""

    text: str


Step = Shell | Patch | Say
Protocol = Literal["responses", "gemini", "chat"]
USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]

    def text(self) -> str:
        return json.dumps(self.body)


def tool_results(protocol: Protocol, body: dict[str, Any]) -> int:
    if protocol == "responses":
        kinds = ("function_call_output", "custom_tool_call_output")
        return sum(
            1 for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") in kinds
        )
    if protocol == "gemini":
        return sum(
            1
            for content in body.get("contents") or []
            for part in (content.get("parts") or [])
            if isinstance(part, dict) and "functionResponse" in part
        )
    return sum(
        1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool"
    )


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def responses_stream(step: Step, n: int) -> list[bytes]:
    rid = f"resp_{n}"
    if isinstance(step, Shell):
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": step.command}),
            "status": "completed",
        }
    elif isinstance(step, Patch):
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_{n}",
            "call_id": f"call_{n}",
            "name": "apply_patch",
            "input": step.text,
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": step.text, "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    return [
        _sse({"type": "response.created", "response": {"id": rid}}, "response.created"),
        _sse(
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            "response.output_item.done",
        ),
        _sse(
            {"type": "response.completed", "response": {"id": rid, "usage": usage}},
            "response.completed",
        ),
    ]


def gemini_stream(step: Step) -> list[bytes]:
    if isinstance(step, Shell):
        args = {"command": step.command, "description": step.description or step.command}
        parts: list[dict[str, Any]] = [
            {"functionCall": {"name": "run_shell_command", "args": args}}
        ]
    else:
        parts = [{"text": step.text}]
    answer = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": USAGE,
        "modelVersion": "stand-in",
    }
    return [_sse(answer)]


def _schema_value(schema: dict[str, Any]) -> Any:
    """A small value that fits a Gemini-style JSON schema (the CLI's utility calls)."""
    known = {"next_speaker": "user", "model_choice": "flash", "complexity_score": 10}
    if "enum" in schema:
        return schema["enum"][0]
    kind = str(schema.get("type", "OBJECT")).upper()
    if kind == "OBJECT":
        props = schema.get("properties") or {}
        return {k: known.get(k, _schema_value(v)) for k, v in props.items()}
    return {"ARRAY": [], "INTEGER": 1, "NUMBER": 1, "BOOLEAN": False}.get(kind, "stand-in")


def gemini_utility(body: dict[str, Any]) -> dict[str, Any]:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    text = json.dumps(_schema_value(schema)) if schema else "stand-in"
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": USAGE,
    }


def chat_stream(step: Step, n: int, model: str) -> list[bytes]:
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    if isinstance(step, Shell):
        call = {
            "index": 0,
            "id": f"call_{n}",
            "type": "function",
            "function": {
                "name": "bash",
                "arguments": json.dumps(
                    {"command": step.command, "description": step.description or step.command}
                ),
            },
        }
        out = [
            chunk({"role": "assistant", "content": None, "tool_calls": [call]}, None),
            chunk({}, "tool_calls"),
        ]
    else:
        out = [
            chunk({"role": "assistant", "content": ""}, None),
            chunk({"content": step.text}, None),
            chunk({}, "stop"),
        ]
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    out.append(_sse({**base, "choices": [], "usage": usage}))
    out.append(b"data: [DONE]\n\n")
    return out


@dataclass
class ModelAPI(Loopback):
    """Serve `protocol` on 127.0.0.1:<free port> in a thread; `script(steps)` sets the steps."""

    protocol: Protocol
    requests: list[Recorded] = field(default_factory=list)
    _steps: list[Step] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _count: int = 0

    def script(self, steps: Sequence[Step]) -> None:
        with self._lock:
            self._steps = list(steps)
            self.requests.clear()

    def agent_requests(self) -> list[Recorded]:
        """The agent loop's requests (Gemini CLI's utility calls left out)."""
        with self._lock:
            return [r for r in self.requests if ":generateContent" not in r.path]

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[str, list[bytes] | dict[str, Any]]:
        with self._lock:
            self.requests.append(Recorded(path, body))
            self._count += 1
            n = self._count
            if self.protocol == "gemini" and ":generateContent" in path:
                return "application/json", gemini_utility(body)
            done = tool_results(self.protocol, body)
            step = self._steps[done] if done < len(self._steps) else Say("Done.")
        if self.protocol == "responses":
            return "text/event-stream", responses_stream(step, n)
        if self.protocol == "gemini":
            return "text/event-stream", gemini_stream(step)
        return "text/event-stream", chat_stream(step, n, str(body.get("model", "model")))

    def start(self) -> ModelAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # model listings: none
                self._send(200, "application/json", b'{"object": "list", "data": [], "models": []}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                if ":countTokens" in path:
                    self._send(200, "application/json", b'{"totalTokens": 42}')
                    return
                kind, answer = api._answer(path, body if isinstance(body, dict) else {})
                if isinstance(answer, dict):
                    self._send(200, kind, json.dumps(answer).encode())
                else:
                    self._send(200, kind, b"".join(answer))

        self.serve(Handler)
        return self
