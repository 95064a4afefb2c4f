"""Read small urlencoded forms (htmx and the login form send these) without extra dependencies."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request

from worker.errors import BadRequest


async def read_form(request: Request) -> dict[str, str]:
    """The form fields (last value wins); a non-form body is a clear 400."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = await request.body()
    if not raw:
        return {}
    if kind != "application/x-www-form-urlencoded":
        raise BadRequest("send the form as application/x-www-form-urlencoded", field="body")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the form is not valid UTF-8", field="body") from None
    return dict(parse_qsl(text, keep_blank_values=True, max_num_fields=200))


def query_strings(params: dict[str, Any]) -> dict[str, str]:
    """Page filters as the query string an API client would send (empty values left out), to be
    validated with the same schemas as the API's."""
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None or value == "":
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out
