"""The OpenAPI 3.1 document, generated from the same Endpoint specs that validate requests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute, Route

from worker import __version__
from worker.api.endpoint import Endpoint
from worker.auth import is_public
from worker.settings import Settings

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "field": {"type": "string"},
                "line": {"type": "integer", "description": "The import line at fault"},
            },
        }
    },
}

STATUS_TEXT = {
    200: "OK",
    201: "Created",
    204: "No content",
    400: "Bad request (the error names the field)",
    401: "Missing or wrong token",
    403: "Cross-origin write refused",
    404: "Unknown id",
    409: "Conflict",
    413: "Body over the limit",
    421: "Host is not loopback",
    429: "Rate limited (Retry-After)",
    503: "Database busy or shutting down",
    507: "Disk full or database read-only",
}

OBSERVATION: dict[str, Any] = {
    "type": "object",
    "required": ["id", "project", "type", "title", "created_at"],
    "properties": {
        "id": {"type": "integer"},
        "session_id": {"type": ["string", "null"]},
        "project": {"type": "string"},
        "type": {"type": "string"},
        "title": {"type": "string"},
        "body": {"type": "string"},
        "files": {"type": "array", "items": {"type": "string"}},
        "tool_name": {"type": ["string", "null"]},
        "importance": {"type": "integer"},
        "created_at": {"type": "string"},
        "meta": {"type": ["object", "null"]},
        "author": {"type": ["string", "null"]},
        "shared": {"type": "boolean"},
    },
}

_PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")


def _strip_custom(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_custom(v) for k, v in schema.items() if not k.startswith("x-")}
    if isinstance(schema, list):
        return [_strip_custom(v) for v in schema]
    return schema


def _operation(ep: Endpoint) -> dict[str, Any]:
    params: list[dict[str, Any]] = []
    for name, conv in _PARAM.findall(ep.path):
        params.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "schema": {"type": "integer"}
                if conv == "int"
                else {"type": "string", "minLength": 1},
            }
        )
    for name, schema in ep.query.items():
        params.append(
            {
                "name": name,
                "in": "query",
                "required": name in ep.required_query,
                "schema": _strip_custom(schema),
            }
        )
    ok: dict[str, Any] = {"description": STATUS_TEXT.get(ep.status, "OK")}
    if ep.media_type != "application/json":
        ok["content"] = {ep.media_type: {"schema": {"type": "string"}}}
    elif ep.status != 204:
        ok["content"] = {
            "application/json": {"schema": _strip_custom(ep.response or {"type": "object"})}
        }
    for media in ep.extra_media_types:
        ok.setdefault("content", {})[media] = {"schema": {"type": "string"}}
    responses: dict[str, Any] = {str(ep.status): ok}
    for status in ep.extra_statuses:
        if status < 300:
            responses[str(status)] = {**ok, "description": STATUS_TEXT.get(status, "OK")}
    # 404 everywhere: any request naming an id or a project may name one that does not exist.
    errors = [400, 401, 403, 404, 413, 421, 429, 503] if ep.path != "/health" else [421]
    if ep.method != "GET":
        errors.append(507)
    for status in [*errors, *[s for s in ep.extra_statuses if s >= 400]]:
        responses[str(status)] = {
            "description": STATUS_TEXT.get(status, "Error"),
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    op: dict[str, Any] = {
        "summary": ep.summary,
        "operationId": f"{ep.tag}_{ep.handler.__name__}",
        "tags": [ep.tag],
        "parameters": params,
        "responses": responses,
    }
    if ep.description:
        op["description"] = ep.description
    if ep.path == "/health":
        op["security"] = []
    if ep.body is not None:
        op["requestBody"] = {
            "required": ep.body_required,
            "content": {"application/json": {"schema": _strip_custom(ep.body)}},
        }
    return op


def _raw_operations(route: Route) -> dict[str, dict[str, Any]]:
    """Routes that are not JSON Endpoints (dashboard pages, login, static files, this document):
    listed with their path parameters; any status may come back, documented or not."""
    name = getattr(route.endpoint, "__name__", "page")
    doc = (getattr(route.endpoint, "__doc__", None) or "").strip().splitlines()
    tag = "system" if route.path == "/openapi.json" else "dashboard"
    params = [
        {
            "name": pname,
            "in": "path",
            "required": True,
            "schema": {"type": "integer"} if conv == "int" else {"type": "string", "minLength": 1},
        }
        for pname, conv in _PARAM.findall(route.path)
    ]
    out: dict[str, dict[str, Any]] = {}
    for method in sorted((route.methods or set()) - {"HEAD"}):
        op: dict[str, Any] = {
            "summary": doc[0] if doc else f"{method} {route.path}",
            "operationId": f"{tag}_{name}_{method.lower()}",
            "tags": [tag],
            "parameters": params,
            "responses": {
                "default": {
                    "description": "A page, a file, a redirect, or a JSON error",
                    "content": {"*/*": {"schema": {}}},
                }
            },
        }
        if is_public(route.path):
            op["security"] = []
        out[method.lower()] = op
    return out


def build_openapi(routes: Sequence[BaseRoute], settings: Settings) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        ep: Endpoint | None = getattr(route, "cairn_endpoint", None)
        if ep is not None:
            path = _PARAM.sub(lambda m: "{" + m.group(1) + "}", ep.path)
            paths.setdefault(path, {})[ep.method.lower()] = _operation(ep)
        elif isinstance(route, Route):
            path = _PARAM.sub(lambda m: "{" + m.group(1) + "}", route.path)
            for method, op in _raw_operations(route).items():
                paths.setdefault(path, {}).setdefault(method, op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Cairn worker API",
            "version": __version__,
            "description": "Local-first memory for AI coding agents. All times are ISO 8601 UTC. "
            'Errors: {"error": {"code", "message", "field"}}.',
        },
        "servers": [{"url": f"http://127.0.0.1:{settings.server.port}"}],
        "paths": paths,
        "components": {
            "schemas": {"Error": ERROR_SCHEMA, "Observation": OBSERVATION},
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "header": {"type": "apiKey", "in": "header", "name": "X-Cairn-Token"},
            },
        },
        "security": [{"bearer": []}, {"header": []}],
    }
