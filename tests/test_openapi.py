"""GET /openapi.json documents every route the app serves, generated from the same specs
that validate requests (so documentation and behaviour cannot drift)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from worker.api.endpoint import Endpoint
from worker.api.openapi import _PARAM, _strip_custom
from worker.auth import is_public

pytestmark = pytest.mark.both_backends


def _doc(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    doc: dict[str, Any] = response.json()
    return doc


def _openapi_path(path: str) -> str:
    return _PARAM.sub(lambda m: "{" + m.group(1) + "}", path)


def test_every_route_and_method_is_documented(client: TestClient) -> None:
    paths = _doc(client)["paths"]
    missing = []
    for route in client.app.routes:  # type: ignore[attr-defined]
        if isinstance(route, Mount):
            continue  # static files
        assert isinstance(route, Route), route
        documented = paths.get(_openapi_path(route.path), {})
        for method in (route.methods or set()) - {"HEAD"}:
            if method.lower() not in documented:
                missing.append(f"{method} {route.path}")
    assert not missing, f"routes missing from /openapi.json: {missing}"


def test_operation_ids_are_unique(client: TestClient) -> None:
    ids = [op["operationId"] for ops in _doc(client)["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))


def test_request_schemas_are_the_validation_schemas(client: TestClient) -> None:
    paths = _doc(client)["paths"]
    for route in client.app.routes:  # type: ignore[attr-defined]
        ep: Endpoint | None = getattr(route, "cairn_endpoint", None)
        if ep is None:
            continue
        op = paths[_openapi_path(ep.path)][ep.method.lower()]
        if ep.body is not None:
            body = op["requestBody"]["content"]["application/json"]["schema"]
            assert body == _strip_custom(ep.body), ep.path
        documented_query = {p["name"] for p in op["parameters"] if p["in"] == "query"}
        assert documented_query == set(ep.query), ep.path


def test_auth_and_errors_are_documented(client: TestClient) -> None:
    doc = _doc(client)
    assert doc["components"]["schemas"]["Error"]["required"] == ["error"]
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            public = is_public(path.split("{")[0]) or path == "/health"
            if public:
                assert op.get("security") == [], f"{method} {path} should be public"
            elif "default" not in op["responses"]:
                assert "401" in op["responses"], f"{method} {path} lacks its 401"
                assert "421" in op["responses"], f"{method} {path} lacks its 421"


def test_document_loads_as_openapi_in_schemathesis(client: TestClient) -> None:
    schema = schemathesis.openapi.from_dict(_doc(client))
    operations = list(schema.get_all_operations())
    assert operations and all(op.ok() for op in operations)
