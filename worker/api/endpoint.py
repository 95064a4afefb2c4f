"""Declarative JSON endpoints: one spec gives validation, rate limit and the OpenAPI entry."""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from worker.errors import BadRequest, NotFound
from worker.schema import INT64_MAX, Schema, coerce_params, validate

if TYPE_CHECKING:
    from worker.container import Cairn

RateGroup = Literal["read", "write", "login"]


@dataclass
class Call:
    """What a handler receives: the request, validated query/body, path params and the app context."""

    request: Request
    cairn: Cairn
    query: dict[str, Any]
    body: Any
    path: dict[str, Any]


Handler = Callable[[Call], Awaitable[Any]]


@dataclass
class Endpoint:
    method: str
    path: str
    handler: Handler
    summary: str
    tag: str
    query: dict[str, Schema] = field(default_factory=dict)
    required_query: tuple[str, ...] = ()
    body: Schema | None = None
    body_required: bool = True
    response: Schema | None = None
    status: int = 200
    extra_statuses: tuple[int, ...] = ()
    rate: RateGroup | None = None
    raw_response: bool = False  # handler returns a Starlette Response itself (e.g. SSE)
    media_type: str = "application/json"  # of the success response, for /openapi.json
    extra_media_types: tuple[str, ...] = ()  # other success types (e.g. ?format=markdown)
    description: str = ""

    @property
    def rate_group(self) -> RateGroup:
        if self.rate is not None:
            return self.rate
        return "read" if self.method == "GET" else "write"


def path_params(ep: Endpoint, request: Request) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in request.path_params.items():
        if isinstance(value, int) and value > INT64_MAX:
            # No row can have such an id (SQLite ids are 64-bit): answer as for any unknown id.
            raise NotFound(f"{name} {value} does not exist", field=name)
        if isinstance(value, str):
            validate({"type": "string"}, value, name)  # NUL / lone surrogates -> 400
        out[name] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # 1e400 parses to inf, which could be stored but never rendered back as JSON.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


async def read_json(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        raise BadRequest("the request body is empty; send a JSON object", field="body")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"the request body is not valid UTF-8 (byte {exc.start})", field="body"
        ) from None

    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", field="body"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"malformed JSON: {exc}", field="body") from None


def make_route(ep: Endpoint, wrap: Callable[[Endpoint, Callable[..., Any]], Any]) -> Route:
    """Build the Starlette route for `ep`; `wrap` applies the app's rate limiter."""

    async def endpoint(request: Request) -> Response:
        query = coerce_params(ep.query, request.query_params, ep.required_query)
        body: Any = None
        if ep.body is not None:
            raw_present = int(request.headers.get("content-length") or 0) > 0 or ep.body_required
            if raw_present:
                body = validate(ep.body, await read_json(request))
        call = Call(
            request=request,
            cairn=request.state.cairn,
            query=query,
            body=body,
            path=path_params(ep, request),
        )
        result = await ep.handler(call)
        if ep.raw_response:
            assert isinstance(result, Response)
            return result
        if isinstance(result, Response):
            return result
        if isinstance(result, Answer):
            return JSONResponse(result.payload, status_code=result.status)
        if ep.status == 204:
            return Response(status_code=204)
        return JSONResponse(result, status_code=ep.status)

    endpoint.__name__ = f"{ep.tag}_{ep.handler.__name__}"
    endpoint.__qualname__ = endpoint.__name__
    route = Route(ep.path, wrap(ep, endpoint), methods=[ep.method])
    route.cairn_endpoint = ep  # type: ignore[attr-defined]
    return route


@dataclass(frozen=True)
class Answer:
    """A handler's JSON answer with a status other than its endpoint's: encoded when it goes
    out over HTTP, handed over as is to an in-process caller (worker/api/direct.py)."""

    payload: Any
    status: int


def with_status(payload: Any, status: int) -> Answer:
    return Answer(payload, status)
