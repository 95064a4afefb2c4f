"""A memory posted without `kind`: inferred from plain cues in the text, else `fact`."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from worker.memory.kind import DEFAULT_KIND, infer_kind

pytestmark = pytest.mark.both_backends

P = "/p/app"


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("We decided to move the queue to Redis streams", "decision"),
        ("We use pnpm, not npm, in this repo", "decision"),
        ("Settled on Postgres 16 for the new service", "decision"),
        ("I prefer tabs over spaces", "preference"),
        ("Always run the linter before committing", "preference"),
        ("Never force-push to main", "preference"),
        ("Turns out the flaky test depended on the timezone", "lesson"),
        ("The fix was to pin numpy below 2", "lesson"),
        ("We decided to always squash merge", "decision"),  # the plainer cue wins
        ("The API listens on port 8080", "fact"),
        ("Undecided about the cache; unused flags remain", "fact"),  # whole words only
    ],
)
@pytest.mark.sqlite_only("no database: infer_kind is a pure function of the text")
def test_infer_kind(content: str, kind: str) -> None:
    assert infer_kind(content) == kind


def test_post_without_kind_is_201_with_an_inferred_kind(client: TestClient) -> None:
    for content, kind in (
        ("The deploy script lives in ops/deploy.sh", DEFAULT_KIND),
        ("I prefer small pull requests", "preference"),
        ("We decided on SQLite for local storage", "decision"),
    ):
        r = client.post("/api/memories", json={"content": content, "project": P})
        assert r.status_code == 201, r.text
        assert r.json()["kind"] == kind
        assert client.get(f"/api/memories/{r.json()['id']}").json()["kind"] == kind


def test_a_given_kind_always_wins(client: TestClient) -> None:
    r = client.post(
        "/api/memories", json={"kind": "note", "content": "I prefer dark mode", "project": P}
    )
    assert r.status_code == 201 and r.json()["kind"] == "note"
    bad = client.post("/api/memories", json={"kind": "opinion", "content": "x", "project": P})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "kind"


def test_openapi_documents_the_default(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    body = doc["paths"]["/api/memories"]["post"]["requestBody"]["content"]["application/json"]
    schema = body["schema"]
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    assert "kind" not in schema["required"] and "content" in schema["required"]
    assert "inferred from the text" in schema["properties"]["kind"]["description"]
    assert "fact" in schema["properties"]["kind"]["description"]
