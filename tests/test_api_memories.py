"""The memories API: create (scored, merged, superseding), list, edit, archive, forget, relations."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.backends import execute, value
from worker.settings import Settings
from worker.store.backend import Backend

pytestmark = pytest.mark.both_backends

P = "/repo/app"


def save(client: TestClient, content: str, kind: str = "decision", **extra: Any) -> dict[str, Any]:
    r = client.post("/api/memories", json={"kind": kind, "content": content, "project": P, **extra})
    assert r.status_code in (200, 201), r.text
    body: dict[str, Any] = r.json()
    return body


def test_create_scores_importance_and_tags_when_absent(client: TestClient) -> None:
    m = save(client, "Never run migrations on Friday: the deploy pipeline freezes at 16:00 UTC")
    assert m["created"] is True and m["importance_scored"] is True
    assert 3 <= m["importance"] <= 5
    assert 1 <= len(m["tags"]) <= 5 and "never" not in m["tags"] and "the" not in m["tags"]
    assert m["retention"] == 1.0 and m["is_latest"] is True and m["scope"] == "project"


def test_given_importance_and_tags_win(client: TestClient) -> None:
    m = save(client, "CRITICAL: never push to main, always open a PR", importance=1, tags=["Git"])
    assert m["importance"] == 1 and m["importance_scored"] is False
    assert m["tags"] == ["git"]


def test_meta_and_created_at_are_kept_verbatim(client: TestClient) -> None:
    meta = {"dia_id": "D1:3", "nested": {"a": [1, 2, None]}, "ünï": "çødé"}
    m = save(client, "Imported fact", kind="fact", meta=meta, created_at="2023-05-08T13:56:00Z")
    assert m["meta"] == meta
    assert m["created_at"] == "2023-05-08T13:56:00.000Z"
    assert client.get(f"/api/memories/{m['id']}").json()["meta"] == meta


def test_same_content_merges_into_one_memory(client: TestClient, store: Backend) -> None:
    first = save(client, "The API listens on port 8080", kind="note", tags=["api"])
    second = save(
        client, "  the api LISTENS on port   8080 ", kind="decision", importance=5, tags=["port"]
    )
    assert second["id"] == first["id"]
    assert second["merged"] is True and second["created"] is False
    assert second["hit_count"] == 1
    assert second["kind"] == "decision" and second["importance"] == 5
    assert set(second["tags"]) == {"api", "port"}
    assert second["updated_at"] >= first["updated_at"]
    # The higher kind and importance are kept even if a weaker repeat arrives later.
    third = save(client, "The API listens on port 8080", kind="note", importance=1)
    assert third["kind"] == "decision" and third["importance"] == 5 and third["hit_count"] == 2
    assert value(store, "SELECT COUNT(*) FROM memories") == 1


def test_same_content_in_another_project_is_separate(client: TestClient) -> None:
    a = save(client, "Use tabs")
    b = client.post(
        "/api/memories", json={"kind": "decision", "content": "Use tabs", "project": "/other"}
    ).json()
    assert a["id"] != b["id"]


def test_global_scope(client: TestClient) -> None:
    r = client.post(
        "/api/memories",
        json={"kind": "preference", "content": "Answer concisely", "scope": "global"},
    )
    assert r.status_code == 201
    m = r.json()
    assert m["scope"] == "global" and m["project"] is None
    listed = client.get("/api/memories", params={"scope": "global"}).json()["items"]
    assert [x["id"] for x in listed] == [m["id"]]
    with_global = client.get("/api/memories", params={"project": P, "include_global": "true"})
    assert m["id"] in [x["id"] for x in with_global.json()["items"]]
    only_project = client.get("/api/memories", params={"project": P}).json()["items"]
    assert m["id"] not in [x["id"] for x in only_project]


def test_bad_input_gets_precise_errors(client: TestClient) -> None:
    cases = [
        ({"kind": "note", "content": "x"}, "project"),
        ({"kind": "opinion", "content": "x", "project": P}, "kind"),
        ({"kind": "note", "content": "", "project": P}, "content"),
        ({"kind": "note", "content": "x", "project": P, "importance": 6}, "importance"),
        ({"kind": "note", "content": "x", "project": P, "expires_at": "soon"}, "expires_at"),
        ({"kind": "note", "content": "x", "project": P, "meta": {"k": "v" * 5000}}, "meta"),
        ({"kind": "note", "content": "x", "project": P, "tags": [""]}, "tags[0]"),
    ]
    for body, field in cases:
        r = client.post("/api/memories", json=body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"]["field"] == field
    assert client.get("/api/memories/999").status_code == 404
    assert client.get("/api/memories", params={"importance_min": "x"}).status_code == 400


def test_list_filters_and_cursor(client: TestClient) -> None:
    ids = [save(client, f"Fact number {i} about module m{i}", kind="fact")["id"] for i in range(5)]
    pinned = save(client, "Pinned decision about deployment windows", pinned=True)
    r = client.get("/api/memories", params={"project": P, "limit": 2}).json()
    assert [m["id"] for m in r["items"]] == [pinned["id"], ids[4]]
    nxt = client.get("/api/memories", params={"project": P, "limit": 2, "cursor": r["next_cursor"]})
    assert [m["id"] for m in nxt.json()["items"]] == [ids[3], ids[2]]
    assert [
        m["id"] for m in client.get("/api/memories", params={"pinned": "true"}).json()["items"]
    ] == [pinned["id"]]
    facts = client.get("/api/memories", params={"kind": "fact", "q": "NUMBER 3"}).json()["items"]
    assert [m["id"] for m in facts] == [ids[3]]
    by_ids = client.get("/api/memories", params={"ids": f"{ids[1]},{ids[0]}"}).json()["items"]
    assert [m["id"] for m in by_ids] == [ids[1], ids[0]]


def test_patch_rescoring_and_conflict(client: TestClient, settings: Settings) -> None:
    m = save(client, "note about logging", kind="note")
    other = save(client, "Something else entirely", kind="note")
    r = client.patch(
        f"/api/memories/{m['id']}",
        json={"content": "Always use structured logging with request ids, never print()"},
    )
    assert r.status_code == 200
    edited = r.json()
    assert edited["importance"] > m["importance"]  # scored again: the importance was not given
    assert "logging" in edited["tags"]
    clash = client.patch(f"/api/memories/{m['id']}", json={"content": other["content"]})
    assert clash.status_code == 409 and clash.json()["error"]["field"] == "content"
    pinned = client.patch(f"/api/memories/{m['id']}", json={"pinned": True, "importance": 2})
    assert pinned.json()["pinned"] is True and pinned.json()["importance"] == 2
    assert client.patch("/api/memories/999", json={"pinned": True}).status_code == 404


def test_archive_and_restore(client: TestClient) -> None:
    m = save(client, "Use ruff for linting")
    r = client.post(f"/api/memories/{m['id']}/archive")
    assert r.status_code == 200 and r.json()["archived"] is True
    assert r.json()["archive_reason"] == "manual"
    live = client.get("/api/memories", params={"project": P}).json()["items"]
    assert m["id"] not in [x["id"] for x in live]
    everything = client.get("/api/memories", params={"project": P, "include_archived": "true"})
    assert m["id"] in [x["id"] for x in everything.json()["items"]]
    only = client.get("/api/memories", params={"archived": "true"}).json()["items"]
    assert [x["id"] for x in only] == [m["id"]]
    back = client.post(f"/api/memories/{m['id']}/restore").json()
    assert back["archived"] is False and back["archived_at"] is None
    assert m["id"] in [x["id"] for x in client.get("/api/memories").json()["items"]]


def test_forget_leaves_nothing(client: TestClient, store: Backend, backend: str) -> None:
    m = save(client, "The staging password rotates every 30 days")
    older = save(client, "Use PostgreSQL 15 for the database")
    newer = save(client, "Move to PostgreSQL 16 for the database")
    assert newer["supersedes"] == [older["id"]]
    execute(
        store,
        "INSERT INTO embeddings(item_kind, item_id, project_id, model, dim, vector, created_at) "
        "VALUES ('memory', ?, NULL, 'm', 1, ?, 0)",
        (m["id"], b"\x00\x00\x00\x00"),
    )
    r = client.delete(f"/api/memories/{m['id']}")
    assert r.status_code == 200 and r.json() == {"id": m["id"], "deleted": True}
    assert client.get(f"/api/memories/{m['id']}").status_code == 404
    assert client.delete(f"/api/memories/{m['id']}").status_code == 404
    client.delete(f"/api/memories/{newer['id']}")
    assert value(store, "SELECT COUNT(*) FROM memories WHERE id = ?", (m["id"],)) == 0
    assert value(store, "SELECT COUNT(*) FROM embeddings WHERE item_kind = 'memory'") == 0
    assert value(store, "SELECT COUNT(*) FROM memory_relations") == 0
    found = client.get("/api/search", params={"q": "staging password", "project": P}).json()
    assert found["hits"] == []
    if backend == "sqlite":
        assert (
            value(store, "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'staging'")
            == 0
        )
    # Forgetting the newer memory makes the older one the latest again.
    assert client.get(f"/api/memories/{older['id']}").json()["is_latest"] is True


def test_supersession_on_save_and_chain(client: TestClient) -> None:
    old = save(client, "Use PostgreSQL 15 for the database")
    new = save(client, "Move to PostgreSQL 16 for the database")
    assert new["supersedes"] == [old["id"]]
    rel = client.get(f"/api/memories/{old['id']}/relations").json()
    assert rel["is_latest"] is False and rel["superseded_by"] == new["id"]
    assert rel["latest_id"] == new["id"]
    assert [m["id"] for m in rel["chain"]] == [old["id"], new["id"]]
    assert (
        rel["relations"][0]["kind"] == "updates" and rel["relations"][0]["reason"] == "supersession"
    )
    latest = client.get("/api/memories", params={"project": P, "latest_only": "true"}).json()[
        "items"
    ]
    assert [m["id"] for m in latest] == [new["id"]]
    # Unrelated memories are left alone.
    other = save(client, "Alice owns the billing service")
    assert save(client, "Bob owns the auth service")["supersedes"] == []
    assert client.get(f"/api/memories/{other['id']}").json()["is_latest"] is True


def test_imports_do_not_supersede_by_default(client: TestClient) -> None:
    save(client, "Use PostgreSQL 15 for the database")
    imported = save(client, "Use PostgreSQL 14 for the database", created_at="2020-01-01T00:00:00Z")
    assert imported["supersedes"] == []
    opted = save(
        client,
        "Use PostgreSQL 13 for the database",
        created_at="2019-01-01T00:00:00Z",
        supersede=True,
    )
    # An import older than the stored memory is itself the superseded one.
    assert opted["is_latest"] is False


def test_manual_relations(client: TestClient) -> None:
    a = save(client, "Cache HTTP responses for 5 minutes", kind="fact")
    b = save(client, "The cache lives in Redis", kind="fact")
    r = client.post(
        f"/api/memories/{b['id']}/relations", json={"to_id": a["id"], "kind": "extends"}
    )
    assert r.status_code == 201
    rel_id = r.json()["id"]
    again = client.post(
        f"/api/memories/{b['id']}/relations", json={"to_id": a["id"], "kind": "extends"}
    )
    assert again.status_code == 200 and again.json()["id"] == rel_id
    assert client.get(f"/api/memories/{a['id']}").json()["is_latest"] is True
    up = client.post(
        f"/api/memories/{b['id']}/relations", json={"to_id": a["id"], "kind": "updates"}
    )
    assert client.get(f"/api/memories/{a['id']}").json()["superseded_by"] == b["id"]
    removed = client.delete(f"/api/memories/{b['id']}/relations/{up.json()['id']}")
    assert removed.status_code == 200 and removed.json()["deleted"] is True
    assert client.get(f"/api/memories/{a['id']}").json()["is_latest"] is True
    bad = [
        ({"to_id": b["id"], "kind": "extends"}, 400, "to_id"),
        ({"to_id": 999, "kind": "extends"}, 404, "to_id"),
        ({"to_id": a["id"], "kind": "likes"}, 400, "kind"),
    ]
    for body, status, field in bad:
        r = client.post(f"/api/memories/{b['id']}/relations", json=body)
        assert r.status_code == status and r.json()["error"]["field"] == field
    assert client.delete(f"/api/memories/{a['id']}/relations/{rel_id + 100}").status_code == 404


def test_events_are_published(client: TestClient) -> None:
    cairn = client.app_state["cairn"]
    seen: list[tuple[str, list[int]]] = []
    cairn.item_listeners.append(lambda kind, ids: seen.append((kind, ids)))
    # On a team database the worker's broadcaster sits behind the team feed (team_feed.py).
    broadcaster = getattr(cairn.events, "local", cairn.events)
    start = broadcaster._seq
    m = save(client, "Event check memory")
    save(client, "Event check memory")
    client.patch(f"/api/memories/{m['id']}", json={"content": "Event check memory, edited"})
    client.delete(f"/api/memories/{m['id']}")
    names = [e.event for e in broadcaster.backlog(f"{broadcaster.boot}-{start}")]
    assert names == ["memory.created", "memory.updated", "memory.updated", "memory.deleted"]
    # New and edited content is handed to the embedder; a merge changes no text.
    assert seen == [("memory", [m["id"]]), ("memory", [m["id"]])]


def test_global_preferences_reach_session_start_context(client: TestClient) -> None:
    r = client.post(
        "/api/memories",
        json={"kind": "preference", "content": "Answer concisely", "scope": "global"},
    )
    assert r.json()["importance"] >= 4  # scored: a standing instruction for every project
    given = client.post(
        "/api/memories",
        json={"kind": "preference", "content": "Use emoji", "scope": "global", "importance": 1},
    )
    assert given.json()["importance"] == 1  # a given importance always wins
    for project in ("/repo/one", "/repo/two"):
        context = client.get("/api/context", params={"project": project})
        assert context.status_code == 200
        assert "Answer concisely" in context.json()["text"]


def test_a_short_project_name_finds_the_one_project_so_named(client: TestClient) -> None:
    """`"project": "demo-repo"` is the checkout /home/ann/src/demo-repo the hooks keyed by its
    path, not a second project with the same name in every list; a name two projects share is
    a 400 naming both."""
    first = save(client, "Deploys go through make release", project="/home/ann/src/demo-repo")
    short = save(client, "Staging resets every night at 02:00", project="demo-repo")
    assert short["project"] == first["project"] == "/home/ann/src/demo-repo"
    named = [p for p in client.get("/api/projects").json()["items"] if p["name"] == "demo-repo"]
    assert len(named) == 1
    save(client, "The other checkout's own rule", project="/work/fork/demo-repo")
    r = client.post(
        "/api/memories", json={"kind": "fact", "content": "Which one?", "project": "demo-repo"}
    )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["field"] == "project"
    assert (
        "/home/ann/src/demo-repo" in error["message"] and "/work/fork/demo-repo" in error["message"]
    )
    # A name nobody has is a new project, as before.
    assert save(client, "A brand new one", project="scratchpad")["project"] == "scratchpad"


def test_a_memory_saved_while_one_session_works_on_the_project_is_that_session_s(
    client: TestClient,
) -> None:
    """An agent's MCP tool saves with no session: the session at work in the project is where the
    memory came from (the prompt context reads its session's other items as its thread)."""
    assert save(client, "Retries use exponential backoff capped at 30 s")["session_id"] is None
    r = client.post("/api/sessions", json={"session_id": "s-work", "project": P})
    assert r.status_code in (200, 201), r.text
    assert save(client, "Jobs retry at most 5 times")["session_id"] == "s-work"
    given = save(client, "The queue is Redis streams", session_id="s-other")
    assert given["session_id"] == "s-other"  # a session named is kept
    dated = save(client, "Workers run on Fly.io", created_at="2024-05-01T10:00:00Z")
    assert dated["session_id"] is None  # imported history is not today's session's
    assert save(client, "Deploys need a green main", project="/repo/else")["session_id"] is None
    r = client.post("/api/sessions", json={"session_id": "s-two", "project": P})
    assert r.status_code in (200, 201), r.text
    assert save(client, "Logs are JSON lines")["session_id"] is None  # which of the two?
    assert client.post("/api/sessions/s-work/end", json={"reason": "exit"}).status_code == 200
    assert save(client, "Metrics go to Prometheus")["session_id"] == "s-two"
