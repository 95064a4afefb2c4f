"""Run one HTTP request through the whole app in-process (no socket): middleware, auth,
validation and rate limits apply exactly as for a client. Used by the spool replay and the
dashboard pages."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import unquote

from starlette.types import ASGIApp, Message


async def call_app(
    app: ASGIApp,
    method: str,
    path: str,
    *,
    query: str = "",
    body: Any = None,
    token: str,
    host: str,
    state: dict[str, Any],
    client: tuple[str, int],
    server: tuple[str, int] | None,
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> tuple[int, bytes]:
    """Send `method path?query` with a JSON `body` and the token; returns (status, raw body)."""
    raw = b"" if body is None else json.dumps(body).encode("utf-8")
    headers = [
        (b"host", host.encode("latin-1")),
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-length", str(len(raw)).encode()),
        *(extra_headers or []),
    ]
    if body is not None:
        headers.append((b"content-type", b"application/json"))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        # As a server does: routing sees the decoded path (an id may hold an encoded "/").
        "path": unquote(path),
        "raw_path": path.encode("latin-1", "replace"),
        "query_string": query.encode("latin-1", "replace"),
        "root_path": "",
        "headers": headers,
        "client": client,
        "server": server,
        "state": state,
    }
    sent = False
    status = 500
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await asyncio.Event().wait()  # the caller never disconnects
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)
