"""Arbitrary JSON at the memory and lifecycle routes: a clear 4xx or success, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.examples import examples

pytestmark = pytest.mark.both_backends

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
fields = st.sampled_from(
    ["kind", "content", "project", "scope", "importance", "tags", "pinned", "expires_at",
     "created_at", "meta", "session_id", "event_id", "supersede", "to_id", "dry_run"]
)  # fmt: skip
LIST_PARAMS = [
    "project", "scope", "kind", "pinned", "importance_min", "archived", "include_archived",
    "latest_only", "q", "tag", "ids", "cursor", "limit",
]  # fmt: skip
LIST_PARAMS = [
    "project", "scope", "kind", "pinned", "importance_min", "archived", "include_archived",
    "latest_only", "q", "tag", "ids", "cursor", "limit",
]  # fmt: skip
bodies = st.dictionaries(fields, json_values, max_size=8)
FUZZ = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def assert_clean(response: Any) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["code"] and error["message"]


@FUZZ
@given(body=bodies)
def test_create_and_patch_never_fail_badly(client: TestClient, body: dict[str, Any]) -> None:
    assert_clean(client.post("/api/memories", json=body))
    assert_clean(client.patch("/api/memories/1", json=body))
    assert_clean(client.post("/api/memories/1/relations", json=body))


@FUZZ
@given(body=bodies, path=st.sampled_from(["/api/decay/run", "/api/compress"]))
def test_lifecycle_routes_never_fail_badly(
    client: TestClient, body: dict[str, Any], path: str
) -> None:
    assert_clean(
        client.post(path, json={**body, "dry_run": True} if "dry_run" not in body else body)
    )


@FUZZ
@given(params=st.dictionaries(st.sampled_from(LIST_PARAMS), st.text(max_size=20), max_size=5))
def test_list_never_fails_badly(client: TestClient, params: dict[str, str]) -> None:
    assert_clean(client.get("/api/memories", params=params))


def test_huge_ids_are_not_found(client: TestClient) -> None:
    for path in ("/api/memories/99999999999999999999999", "/api/observations/99999999999999999999"):
        r = client.delete(path)
        assert r.status_code in (400, 404), r.text
    r = client.post("/api/memories", json={"kind": "note", "content": "  \n ", "project": "/p"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "content"
