"""Decay pass, caps, observation archive/restore/forget and compression through the API."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.app import create_app
from worker.retrieval.embedder import FakeEmbedder, to_blob
from worker.settings import Settings, load_settings

P = "/repo/life"


def ago(days: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).isoformat().replace("+00:00", "Z")


@contextmanager
def app_client(**overrides: Any) -> Iterator[tuple[TestClient, Settings]]:
    settings = load_settings(**overrides)
    with TestClient(create_app(settings), base_url=BASE_URL, raise_server_exceptions=False) as c:
        c.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
        yield c, settings


def memory(client: TestClient, content: str, **extra: Any) -> dict[str, Any]:
    body = {"kind": "fact", "content": content, "project": P, **extra}
    r = client.post("/api/memories", json=body)
    assert r.status_code in (200, 201), r.text
    out: dict[str, Any] = r.json()
    return out


def observation(client: TestClient, title: str, type_: str = "command", **extra: Any) -> int:
    r = client.post(
        "/api/observations", json={"project": P, "type": type_, "title": title, **extra}
    )
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def db(settings: Settings) -> sqlite3.Connection:
    return sqlite3.connect(settings.db_path)


def test_decay_pass_archives_faded_and_expired_items(
    client: TestClient, settings: Settings
) -> None:
    faded = memory(client, "Old trivia about the build", importance=1, created_at=ago(60))
    pinned = memory(client, "Old but pinned", importance=1, created_at=ago(60), pinned=True)
    used = memory(client, "Old but often used", importance=1, created_at=ago(60))
    important = memory(client, "Old but important", importance=5, created_at=ago(60))
    expired = memory(client, "Temporary freeze", importance=5, expires_at=ago(1))
    fresh = memory(client, "Fresh fact", importance=1)
    old_cmd = observation(client, "ls -la", created_at=ago(10))
    old_edit = observation(client, "Edit app.py", "file_write", created_at=ago(10))
    with db(settings) as conn:
        conn.execute("UPDATE memories SET retrieval_count = 20 WHERE id = ?", (used["id"],))

    dry = client.post("/api/decay/run", json={"dry_run": True}).json()
    assert dry["dry_run"] is True
    assert dry["memories"]["decayed"] == 1 and dry["memories"]["expired"] == 1
    assert set(dry["memories"]["ids"]) == {faded["id"], expired["id"]}
    assert dry["observations"]["ids"] == [old_cmd]
    assert client.get(f"/api/memories/{faded['id']}").json()["archived"] is False

    done = client.post("/api/decay/run").json()
    assert done["memories"]["archived"] == 2 and done["observations"]["archived"] == 1
    assert done["memories"]["scanned"] == 6
    reasons = {
        m["id"]: m["archive_reason"]
        for m in client.get("/api/memories", params={"archived": "true"}).json()["items"]
    }
    assert reasons == {faded["id"]: "decay", expired["id"]: "expired"}
    live = {m["id"] for m in client.get("/api/memories", params={"project": P}).json()["items"]}
    assert live == {pinned["id"], used["id"], important["id"], fresh["id"]}
    obs = client.get("/api/observations", params={"project": P}).json()["items"]
    assert [o["id"] for o in obs] == [old_edit]
    # A second pass finds nothing new.
    again = client.post("/api/decay/run").json()
    assert again["memories"]["archived"] == 0 and again["observations"]["archived"] == 0
    status = client.get("/api/decay").json()
    assert status["policy"]["memory_half_lives_days"] == [7, 14, 30, 90, 365]
    assert status["service"]["runs"] == 2


def test_restored_items_stay_restored(client: TestClient) -> None:
    m = memory(client, "Faded memory", importance=1, created_at=ago(90))
    o = observation(client, "npm test", created_at=ago(30))
    client.post("/api/decay/run")
    assert client.get(f"/api/memories/{m['id']}").json()["archived"] is True
    restored = client.post(f"/api/memories/{m['id']}/restore").json()
    assert restored["archived"] is False and restored["retention"] == 1.0
    r = client.post(f"/api/observations/{o}/restore")
    assert r.status_code == 200 and r.json()["archived"] is False
    client.post("/api/decay/run")
    assert client.get(f"/api/memories/{m['id']}").json()["archived"] is False
    assert client.get(f"/api/observations/{o}").json()["archived"] is False


def test_decay_run_for_one_project_and_bad_input(client: TestClient) -> None:
    memory(client, "Faded here", importance=1, created_at=ago(90))
    other = client.post(
        "/api/memories",
        json={
            "kind": "fact",
            "content": "Faded there",
            "project": "/other",
            "importance": 1,
            "created_at": ago(90),
        },
    ).json()
    r = client.post("/api/decay/run", json={"project": P}).json()
    assert r["memories"]["archived"] == 1
    assert client.get(f"/api/memories/{other['id']}").json()["archived"] is False
    missing = client.post("/api/decay/run", json={"project": "/nope"})
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "project"
    bad = client.post("/api/decay/run", json={"dry_run": "yes"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "dry_run"


def test_caps_evict_lowest_retention_and_limit_chatter() -> None:
    with app_client(obs_cap_per_project=10, decay_first_run_seconds=3600.0) as (client, settings):
        commands = [
            observation(client, f"cmd {i}", created_at=ago(0.3 - i * 0.01)) for i in range(20)
        ]
        edits = [
            observation(client, f"edit {i}", "file_write", created_at=ago(0.1)) for i in range(5)
        ]

        def live_ids() -> set[int]:
            items = client.get("/api/observations", params={"project": P, "limit": 100})
            return {o["id"] for o in items.json()["items"]}

        first = client.post("/api/decay/run").json()
        # Command chatter may hold 30% of the cap: the 3 freshest commands stay, every edit stays.
        assert first["observations"]["evicted"] == 17
        assert live_ids() == {*commands[-3:], *edits}
        # Over the cap: the lowest retention goes first (old edits fade below fresh commands).
        old_edits = [
            observation(client, f"old edit {i}", "file_write", created_at=ago(40 - i))
            for i in range(9)
        ]
        second = client.post("/api/decay/run").json()
        assert second["observations"]["evicted"] == 7
        assert live_ids() == {*commands[-3:], *edits, *old_edits[-2:]}
        with db(settings) as conn:
            reasons = {
                r[0]
                for r in conn.execute(
                    "SELECT archive_reason FROM observations WHERE archived_at IS NOT NULL"
                )
            }
        assert reasons == {"cap"}


def test_caps_are_enforced_soon_after_new_observations() -> None:
    overrides = {
        "obs_cap_per_project": 5,
        "obs_cap_check_seconds": 0.0,
        "decay_first_run_seconds": 3600.0,
    }
    with app_client(**overrides) as (client, _settings):
        for i in range(12):
            observation(client, f"edit {i}", "file_write")

        def live() -> int:
            items = client.get("/api/observations", params={"project": P, "limit": 100})
            return len(items.json()["items"])

        assert wait_for(lambda: live() == 5), live()
        status = client.get("/api/decay").json()["service"]
        assert status["evicted_by_cap_since_start"] == 7 and status["runs"] == 0


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_scheduled_pass_runs_in_the_worker() -> None:
    with app_client(decay_first_run_seconds=0.0, decay_interval_seconds=0.2) as (client, _settings):
        m = memory(client, "Ancient fact", importance=1, created_at=ago(365))

        def archived() -> bool:
            return bool(client.get(f"/api/memories/{m['id']}").json()["archived"])

        assert wait_for(archived)
        assert client.get("/api/decay").json()["service"]["runs"] >= 1


def test_observation_archive_restore_forget(client: TestClient, settings: Settings) -> None:
    oid = observation(client, "grep -rn zebracorn src", body="zebracorn found in 3 files")
    keep = observation(client, "unrelated command")
    r = client.post(f"/api/observations/{oid}/archive")
    assert r.status_code == 200 and r.json()["archived"] is True
    listed = client.get("/api/observations", params={"project": P}).json()["items"]
    assert [o["id"] for o in listed] == [keep]
    everything = client.get("/api/observations", params={"project": P, "include_archived": "true"})
    assert {o["id"] for o in everything.json()["items"]} == {oid, keep}
    assert client.post(f"/api/observations/{oid}/restore").json()["archived"] is False
    with db(settings) as conn:
        conn.execute(
            "INSERT INTO embeddings(item_kind, item_id, project_id, model, dim, vector, created_at) "
            "VALUES ('observation', ?, NULL, 'm', 1, x'00000000', 0)",
            (oid,),
        )
    gone = client.delete(f"/api/observations/{oid}")
    assert gone.status_code == 200 and gone.json() == {"id": oid, "deleted": True}
    assert client.get(f"/api/observations/{oid}").status_code == 404
    assert client.delete(f"/api/observations/{oid}").status_code == 404
    assert client.post(f"/api/observations/{oid}/archive").status_code == 404
    assert client.post(f"/api/observations/{oid}/restore").status_code == 404
    with db(settings) as conn:
        assert (
            conn.execute("SELECT COUNT(*) FROM observations WHERE id = ?", (oid,)).fetchone()[0]
            == 0
        )
        fts = "SELECT COUNT(*) FROM search_index WHERE search_index MATCH 'zebracorn'"
        assert conn.execute(fts).fetchone()[0] == 0
        assert (
            conn.execute(
                "SELECT COUNT(*) FROM search_index WHERE kind = 'observation' AND item_id = ?",
                (oid,),
            ).fetchone()[0]
            == 0
        )
        assert conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == 0
    hits = client.get("/api/search", params={"q": "zebracorn", "mode": "keyword"})
    if hits.status_code == 200:
        assert hits.json()["hits"] == []


# ------------------------------------------------------------------ compression
def test_compress_lexical_fallback_merges_and_records(
    client: TestClient, settings: Settings
) -> None:
    keep = memory(
        client, "Use pnpm instead of npm for installing packages", kind="decision", importance=4
    )
    dup = memory(
        client,
        "Use pnpm, not npm, for installing packages. The lockfile is pnpm-lock.yaml.",
        importance=2,
        supersede=False,
    )
    other = memory(client, "The CI cache key includes the Node version")
    plan = client.post("/api/compress", json={"project": P, "dry_run": True}).json()
    assert plan["dry_run"] is True and plan["method"] == "lexical"
    assert "lexically" in plan["note"]
    assert plan["merged"] == 1
    merge = plan["merges"][0]
    assert (merge["keep_id"], merge["archive_id"]) == (keep["id"], dup["id"])
    assert "pnpm-lock.yaml" in merge["appended"]
    assert client.get(f"/api/memories/{dup['id']}").json()["archived"] is False

    done = client.post("/api/compress", json={"project": P}).json()
    assert done["merged"] == 1
    kept = client.get(f"/api/memories/{keep['id']}").json()
    assert kept["content"].startswith(keep["content"]) and "pnpm-lock.yaml" in kept["content"]
    assert kept["importance"] == 4 and kept["hit_count"] == 1
    gone = client.get(f"/api/memories/{dup['id']}").json()
    assert gone["archived"] is True and gone["archive_reason"] == "merged"
    rel = client.get(f"/api/memories/{keep['id']}/relations").json()["relations"]
    assert [(r["kind"], r["to_id"], r["reason"]) for r in rel] == [
        ("derives", dup["id"], "compress")
    ]
    assert client.get(f"/api/memories/{other['id']}").json()["archived"] is False
    assert client.post("/api/compress", json={"project": P}).json()["merged"] == 0


def test_compress_with_stored_embeddings(client: TestClient, settings: Settings) -> None:
    texts = [
        "Run the database migrations before starting the API server",
        "Before starting the API server run the database migrations first",
        "Frontend bundles are built with Vite",
    ]
    rows = [memory(client, t, kind="lesson", supersede=False) for t in texts]
    vectors = FakeEmbedder(256).embed(texts)
    with db(settings) as conn:
        for row, vector in zip(rows, vectors, strict=True):
            conn.execute(
                "INSERT INTO embeddings(item_kind, item_id, project_id, model, dim, vector, "
                "created_at) VALUES ('memory', ?, 1, 'fake-hash-256', 256, ?, 0)",
                (row["id"], to_blob(vector)),
            )
    plan = client.post("/api/compress", json={"project": P, "dry_run": True}).json()
    assert plan["method"] == "embeddings" and plan["note"] is None and plan["embedded"] == 3
    assert [(m["archive_id"], m["method"]) for m in plan["merges"]] == [
        (rows[0]["id"], "embeddings")
    ]
    assert plan["merges"][0]["similarity"] >= 0.88
    done = client.post("/api/compress", json={"project": P}).json()
    assert done["merged"] == 1
    kept = client.get(f"/api/memories/{rows[1]['id']}").json()
    assert kept["content"] == texts[1]  # nothing new to add: the text is unchanged
    assert client.get(f"/api/memories/{rows[0]['id']}").json()["archive_reason"] == "merged"


def test_compress_turns_conflicting_near_duplicates_into_supersession(client: TestClient) -> None:
    old = memory(
        client, "Use PostgreSQL 15 for the database server", kind="decision", supersede=False
    )
    new = memory(
        client, "Use PostgreSQL 16 for the database server", kind="decision", supersede=False
    )
    done = client.post("/api/compress", json={"project": P, "dry_run": False}).json()
    assert done["merged"] == 0 and done["superseded"] == 1
    assert done["supersessions"] == [
        {
            "new_id": new["id"],
            "old_id": old["id"],
            "similarity": done["supersessions"][0]["similarity"],
        }
    ]
    assert client.get(f"/api/memories/{old['id']}").json()["superseded_by"] == new["id"]


def test_compress_bad_input(client: TestClient) -> None:
    r = client.post("/api/compress", json={"project": "/nope"})
    assert r.status_code == 404 and r.json()["error"]["field"] == "project"
    r = client.post("/api/compress", json={"scope": "project"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "project"
    r = client.post("/api/compress", json={"scope": "galaxy"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "scope"
    assert client.post("/api/compress").json()["scanned"] == 0


@pytest.mark.parametrize("path", ["/api/decay/run", "/api/compress"])
def test_lifecycle_routes_need_the_token(anon_client: TestClient, path: str) -> None:
    assert anon_client.post(path, json={}).status_code == 401
