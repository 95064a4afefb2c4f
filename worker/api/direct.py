"""Hook requests replayed by the worker itself (the spool, an import's batch) run straight into
their endpoint: the same route match, body validation, path checks and handler (so the same
idempotency) as over HTTP, without a second pass through the middleware and the JSON encoding
there and back that an in-process HTTP call costs per request. The batch they came in was
authenticated and checked once; the spool is the worker's own."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route

from worker.api.endpoint import Answer, Call, Endpoint, path_params
from worker.container import Cairn
from worker.errors import BadRequest, CairnError, error_body
from worker.schema import coerce_params, validate
from worker.store.errors import StoreError

log = logging.getLogger(__name__)


class DirectDispatch:
    """`await dispatch(method, "/api/...?query", body)` -> (status, parsed JSON answer)."""

    def __init__(
        self,
        routes: list[BaseRoute],
        cairn: Cairn,
        state: dict[str, Any],
        http_error: Callable[[StoreError], CairnError],
    ) -> None:
        self.routes = [
            (route, ep)
            for route in routes
            if isinstance(route, Route)
            and (ep := getattr(route, "cairn_endpoint", None)) is not None
            and not ep.raw_response
        ]
        self.cairn = cairn
        self.state = state
        self.http_error = http_error  # the app's mapping of store errors to HTTP answers

    def _match(self, scope: dict[str, Any]) -> tuple[Endpoint, dict[str, Any]] | None:
        for route, ep in self.routes:
            match, child = route.matches(scope)
            if match == Match.FULL:
                return ep, child.get("path_params", {})
        return None

    async def __call__(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        path, _, query = target.partition("?")
        scope: dict[str, Any] = {
            "type": "http",
            "method": method,
            "path": unquote(path),
            "root_path": "",
            "query_string": query.encode("latin-1", "replace"),
            "headers": [],
            "state": self.state,
        }
        found = self._match(scope)
        if found is None:
            return 404, error_body("not_found", f"no route for {method} {path}")
        ep, params = found
        scope["path_params"] = params
        try:
            request = Request(scope)
            payload = None
            if ep.body is not None and (body is not None or ep.body_required):
                if body is None:
                    raise BadRequest("the request body is empty; send a JSON object", field="body")
                payload = validate(ep.body, body)
            call = Call(
                request=request,
                cairn=self.cairn,
                query=coerce_params(ep.query, QueryParams(query), ep.required_query),
                body=payload,
                path=path_params(ep, request),
            )
            result = await ep.handler(call)
        except CairnError as exc:
            return exc.status, exc.body()
        except StoreError as exc:
            answer = self.http_error(exc)
            return answer.status, answer.body()
        except Exception:
            log.exception("replayed %s %s failed", method, path)
            return 500, error_body("internal_error", "internal error")
        if isinstance(result, Answer):
            return result.status, result.payload
        if isinstance(result, JSONResponse):
            return result.status_code, json.loads(bytes(result.body))
        if isinstance(result, Response):
            return result.status_code, None
        if ep.status == 204:
            return 204, None
        return ep.status, result
