"""Call the worker's own JSON API in-process (no socket): pages see exactly what API clients see.

The dashboard shows features other modules own (search, context, memories, lifecycle) through
their documented HTTP contract, so a page never depends on another module's internals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.routing import Match

from worker.inprocess import call_app


@dataclass
class ApiResult:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            return str(self.body["error"].get("message", ""))
        return f"HTTP {self.status}"


def has_route(request: Request, method: str, path: str) -> bool:
    """Whether the app serves `method path` (a feature appears once its module is installed)."""
    scope = {"type": "http", "method": method, "path": path}
    for route in request.app.routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return True
    return False


def _query(params: dict[str, Any] | None) -> str:
    if not params:
        return ""
    clean: dict[str, str] = {}
    for key, value in params.items():
        if value is None or value == "":
            continue
        clean[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return urlencode(clean)


async def api(
    request: Request,
    method: str,
    path: str,
    *,
    params: dict[str, Any] | None = None,
    body: Any = None,
) -> ApiResult:
    """Run `method path` through the whole app (auth, validation, rate limits) and decode JSON."""
    cairn = request.state.cairn
    state = {k: v for k, v in request.scope.get("state", {}).items() if k != "login_required"}
    status, data = await call_app(
        request.app,
        method,
        path,
        query=_query(params),
        body=body,
        token=cairn.tokens.current(),
        host=request.headers.get("host", "127.0.0.1"),
        state=state,
        client=request.scope.get("client") or ("127.0.0.1", 0),
        server=request.scope.get("server"),
        extra_headers=[(b"accept", b"application/json")],
    )
    try:
        decoded: Any = json.loads(data) if data else None
    except ValueError:
        decoded = data.decode("utf-8", "replace")
    return ApiResult(status, decoded)
