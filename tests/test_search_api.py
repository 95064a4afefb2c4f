"""GET /api/search: keyword behaviour, FTS syntax safety, filters, counters, refusal."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.examples import examples

pytestmark = pytest.mark.both_backends

PROJECT = "/repo/alpha"


def _seed(client: TestClient) -> list[dict[str, Any]]:
    items = [
        {
            "type": "file_write",
            "title": "Edit src/auth/user_repository.py",
            "body": "added caching to getUserById so repeated lookups skip the database",
            "files": ["src/auth/user_repository.py"],
        },
        {"type": "command", "title": "pytest tests/test_auth.py", "body": "12 passed in 0.4s"},
        {
            "type": "note",
            "title": "Le funzioni di configurazione",
            "body": "la funzione principale legge il file di configurazione",
        },
        {
            "type": "research",
            "title": "Read docs/deploy.md",
            "body": "deployment uses blue green switching behind nginx",
        },
    ]
    resp = client.post(
        "/api/observations",
        json={"observations": [{"project": PROJECT, "session_id": "s1", **i} for i in items]},
    )
    assert resp.status_code == 201
    created: list[dict[str, Any]] = resp.json()["items"]
    return created


def _titles(resp: Any) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [h["title"] for h in resp.json()["hits"]]


def test_code_identifiers_match_in_every_spelling(client: TestClient) -> None:
    _seed(client)
    for query in ("get_user_by_id", "getUserById", "GetUserByID lookups", "user repository"):
        titles = _titles(client.get("/api/search", params={"q": query, "project": PROJECT}))
        assert titles and titles[0] == "Edit src/auth/user_repository.py", query


def test_italian_and_english_stems(client: TestClient) -> None:
    _seed(client)
    assert _titles(client.get("/api/search", params={"q": "funzioni", "project": PROJECT}))[0] == (
        "Le funzioni di configurazione"
    )
    assert _titles(client.get("/api/search", params={"q": "deploying", "project": PROJECT}))[0] == (
        "Read docs/deploy.md"
    )


def test_title_outranks_body(client: TestClient) -> None:
    client.post(
        "/api/observations",
        json={
            "observations": [
                {
                    "project": PROJECT,
                    "type": "note",
                    "title": "misc",
                    "body": "mentions nginx once",
                },
                {"project": PROJECT, "type": "note", "title": "nginx", "body": "misc notes here"},
            ]
        },
    )
    titles = _titles(client.get("/api/search", params={"q": "nginx", "project": PROJECT}))
    assert titles[0] == "nginx"


def test_unrelated_query_is_refused(client: TestClient) -> None:
    _seed(client)
    body = client.get("/api/search", params={"q": "weather forecast paris", "project": PROJECT})
    assert body.json()["hits"] == []
    assert body.json()["refused"] is True


def test_filters_and_unknown_project(client: TestClient) -> None:
    _seed(client)
    resp = client.get("/api/search", params={"q": "auth", "project": PROJECT, "type": "command"})
    assert _titles(resp) == ["pytest tests/test_auth.py"]
    resp = client.get("/api/search", params={"q": "auth", "project": "/nowhere"})
    assert resp.json()["hits"] == []
    resp = client.get("/api/search", params={"q": "auth", "kind": "bogus"})
    assert resp.status_code == 400
    assert resp.json()["error"]["field"] == "kind"
    resp = client.get("/api/search", params={"q": "auth", "mode": "fuzzy"})
    assert resp.status_code == 400
    assert client.get("/api/search").json()["error"]["field"] == "q"


def test_search_counts_retrievals(client: TestClient) -> None:
    created = _seed(client)
    first = created[0]["id"]
    client.get("/api/search", params={"q": "getUserById", "project": PROJECT})
    client.get("/api/search", params={"q": "getUserById", "project": PROJECT})
    assert client.get(f"/api/observations/{first}").json()["retrieval_count"] == 2


def test_explain_returns_signal_contributions(client: TestClient) -> None:
    _seed(client)
    hit = client.get(
        "/api/search", params={"q": "caching", "project": PROJECT, "explain": "true"}
    ).json()["hits"][0]
    assert set(hit["signals"]) == {
        "relevance",
        "recency",
        "frequency",
        "importance",
        "staleness",
        "project",
        "date",
    }
    assert abs(sum(hit["signals"].values()) - hit["score"]) < 1e-3


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.text(
        alphabet=st.sampled_from(list("\"*:-()^+ANDORNEAR{}[]\\'/.,_ab\u00e8\u4e2d"))
        | st.characters(blacklist_categories=("Cs",)),
        min_size=1,
        max_size=60,
    )
)
def test_fts_syntax_never_raises(client: TestClient, query: str) -> None:
    if not query.strip() or "\x00" in query:
        return
    resp = client.get("/api/search", params={"q": query, "project": PROJECT})
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["hits"], list)


def test_archived_and_superseded_are_hidden_unless_asked(client: TestClient) -> None:
    created = _seed(client)
    first = created[0]["id"]
    assert client.post(f"/api/observations/{first}/archive").status_code == 200
    params = {"q": "getUserById", "project": PROJECT}
    assert first not in [h["id"] for h in client.get("/api/search", params=params).json()["hits"]]
    shown = client.get("/api/search", params={**params, "include_archived": "true"}).json()
    assert first in [h["id"] for h in shown["hits"]]


def test_global_memory_is_found_in_every_project_and_injected(client: TestClient) -> None:
    resp = client.post(
        "/api/memories",
        json={
            "kind": "preference",
            "content": "Always use pnpm instead of npm for JavaScript installs",
            "scope": "global",
            "importance": 5,
        },
    )
    assert resp.status_code == 201, resp.text
    memory_id = resp.json()["id"]
    _seed(client)
    for project in (PROJECT, "/repo/other"):
        client.post("/api/observations", json={"project": project, "type": "note", "title": "x"})
        hits = client.get("/api/search", params={"q": "pnpm install", "project": project}).json()
        assert [(h["kind"], h["id"]) for h in hits["hits"]][:1] == [("memory", memory_id)]
        start = client.get("/api/context", params={"project": project}).json()
        assert "Always use pnpm" in start["text"]


def test_identical_content_is_returned_once(client: TestClient) -> None:
    same = {"project": PROJECT, "type": "note", "title": "flaky test in ci", "body": "retry it"}
    for session in ("a", "b"):
        client.post("/api/observations", json={**same, "session_id": session})
    hits = client.get("/api/search", params={"q": "flaky ci", "project": PROJECT}).json()["hits"]
    assert len(hits) == 1


def test_observation_about_a_file_changed_since_is_stale(client: TestClient) -> None:
    read = {
        "project": PROJECT,
        "type": "research",
        "title": "Read src/billing/invoice.py",
        "body": "invoice totals are computed in cents",
        "files": ["src/billing/invoice.py"],
        "created_at": "2026-01-01T10:00:00Z",
    }
    other = {**read, "title": "Read src/billing/tax.py", "files": ["src/billing/tax.py"]}
    write = {
        "project": PROJECT,
        "type": "file_write",
        "title": "Edit src/billing/invoice.py",
        "body": "switched to decimal",
        "files": ["src/billing/invoice.py"],
        "created_at": "2026-01-02T10:00:00Z",
    }
    client.post("/api/observations", json={"observations": [read, other, write]})
    hits = client.get(
        "/api/search",
        params={"q": "invoice totals cents", "project": PROJECT, "explain": "true"},
    ).json()["hits"]
    staleness = {h["title"]: h["signals"]["staleness"] for h in hits}
    assert staleness["Read src/billing/invoice.py"] < 0
    assert staleness["Read src/billing/tax.py"] == 0
    assert staleness.get("Edit src/billing/invoice.py", 0) == 0  # the write itself is current


def test_a_prompt_naming_the_file_gets_its_earlier_edits_undemoted(client: TestClient) -> None:
    first = {
        "project": PROJECT,
        "type": "file_write",
        "title": "Edit src/billing/invoice.py",
        "body": "invoice totals are computed in cents",
        "files": ["src/billing/invoice.py"],
        "created_at": "2026-01-01T10:00:00Z",
    }
    later = {**first, "body": "invoice totals in decimal", "created_at": "2026-01-02T10:00:00Z"}
    saved = client.post("/api/observations", json={"observations": [first, later]}).json()
    old, new = (item["id"] for item in saved["items"])
    params = {"q": "invoice totals cents", "project": PROJECT, "explain": "true"}
    hits = client.get("/api/search", params=params).json()["hits"]
    assert {h["id"]: h["signals"]["staleness"] for h in hits}[old] < 0
    # At a prompt that names the file, its history is what is asked for.
    params = {"project": PROJECT, "query": "what did we change in src/billing/invoice.py?"}
    items = client.get("/api/context/preview", params=params).json()["items"]
    assert {i["id"]: i["signals"]["staleness"] for i in items} == {old: 0.0, new: 0.0}


def test_a_file_modified_on_disk_since_makes_its_observation_stale(
    client: TestClient, tmp_path: Any
) -> None:
    """Relative paths resolve in the project root (when it exists), absolute ones as they are."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "cache.py").write_text("changed after the observation")
    elsewhere = tmp_path / "notes.md"
    elsewhere.write_text("changed too")
    old = {"type": "research", "created_at": "2026-01-01T10:00:00Z"}
    items = [
        {"project": str(root), "title": "Read src/cache.py", "files": ["src/cache.py"]},
        {"project": str(root), "title": "Read src/gone.py", "files": ["src/gone.py"]},
        {"project": str(root), "title": "Read notes", "files": [str(elsewhere)]},
        {
            "project": str(tmp_path / "nowhere"),
            "title": "Read src/cache.py",
            "files": ["src/cache.py"],
        },
    ]
    body = "cache eviction explained"
    client.post(
        "/api/observations", json={"observations": [{**old, **i, "body": body} for i in items]}
    )

    def staleness(project: str) -> dict[str, float]:
        hits = client.get(
            "/api/search", params={"q": "cache eviction", "project": project, "explain": "true"}
        ).json()["hits"]
        return {h["title"]: h["signals"]["staleness"] for h in hits}

    found = staleness(str(root))
    assert found["Read src/cache.py"] < 0 and found["Read notes"] < 0
    assert found["Read src/gone.py"] == 0
    assert staleness(str(tmp_path / "nowhere"))["Read src/cache.py"] == 0
