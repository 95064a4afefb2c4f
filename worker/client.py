"""A tiny HTTP client to the local worker (for the CLI commands and the MCP server): finds it
through worker.json and the token file."""

from __future__ import annotations

import json
from typing import Any

from worker.runtime import read_runtime
from worker.settings import Settings


class WorkerDown(Exception):
    pass


class ApiError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        message = body.get("error", {}).get("message") if isinstance(body, dict) else str(body)
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.body = body


def base_url(settings: Settings) -> str:
    info = read_runtime(settings)
    if info is None:
        raise WorkerDown("the worker is not running (start it with: cairn start)")
    return f"http://127.0.0.1:{int(info['port'])}"


def request(
    settings: Settings,
    method: str,
    path: str,
    body: Any = None,
    *,
    timeout: float = 30.0,
    raw_body: bytes | None = None,
    content_type: str = "application/json",
) -> Any:
    """JSON in (`body`, or `raw_body` bytes of `content_type`), JSON out; ApiError on 4xx/5xx."""
    url = base_url(settings) + path  # WorkerDown before the HTTP stack is imported
    import urllib.error  # (http.client and email: ~30 ms, only once a request is made)
    import urllib.request

    data = raw_body if raw_body is not None else None if body is None else json.dumps(body).encode()
    token = settings.token_path.read_text().strip() if settings.token_path.exists() else ""
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = raw.decode(errors="replace")
        raise ApiError(exc.code, payload) from None
    except (urllib.error.URLError, OSError) as exc:
        raise WorkerDown(f"the worker does not answer at {url}: {exc}") from None
