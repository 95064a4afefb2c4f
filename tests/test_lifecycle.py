"""Decay pass, caps, observation archive/restore/forget and compression through the API."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.backends import execute, opened_store, rows, value
from tests.conftest import BASE_URL
from worker.app import create_app
from worker.retrieval.embedder import FakeEmbedder
from worker.settings import Settings, load_settings
from worker.store.backend import Backend
from worker.store.vectors import to_blob

pytestmark = pytest.mark.both_backends

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


def test_decay_pass_archives_expired_memories_and_nothing_for_age(
    client: TestClient, settings: Settings
) -> None:
    """Old, rarely used, low-importance items stay: retention ranks them, it does not archive."""
    faded = memory(client, "Old trivia about the build", importance=1, created_at=ago(60))
    pinned = memory(client, "Old but pinned", importance=1, created_at=ago(60), pinned=True)
    important = memory(client, "Old but important", importance=5, created_at=ago(60))
    expired = memory(client, "Temporary freeze", importance=5, expires_at=ago(1))
    kept = memory(client, "Pinned freeze", importance=5, expires_at=ago(1), pinned=True)
    fresh = memory(client, "Fresh fact", importance=1)
    old_cmd = observation(client, "ls -la", created_at=ago(10))
    old_edit = observation(client, "Edit app.py", "file_write", created_at=ago(10))

    dry = client.post("/api/decay/run", json={"dry_run": True}).json()
    assert dry["dry_run"] is True and dry["observation_cap"] == 5000
    assert dry["memories"] == {"scanned": 6, "expired": 1, "archived": 1, "ids": [expired["id"]]}
    assert dry["observations"] == {"scanned": 2, "evicted": 0, "archived": 0, "ids": []}
    assert client.get(f"/api/memories/{expired['id']}").json()["archived"] is False

    done = client.post("/api/decay/run").json()
    assert done["memories"]["archived"] == 1 and done["observations"]["archived"] == 0
    reasons = {
        m["id"]: m["archive_reason"]
        for m in client.get("/api/memories", params={"archived": "true"}).json()["items"]
    }
    assert reasons == {expired["id"]: "expired"}
    live = {
        m["id"]: m["retention"]
        for m in client.get("/api/memories", params={"project": P}).json()["items"]
    }
    assert live.keys() == {faded["id"], pinned["id"], important["id"], kept["id"], fresh["id"]}
    # The project was worked on two days since the old memories (10 days ago and today).
    assert live[fresh["id"]] == live[pinned["id"]] == 1.0
    assert live[faded["id"]] == pytest.approx(0.5 ** (2 / 7), abs=1e-3)
    assert live[faded["id"]] < live[important["id"]] < 1.0
    obs = client.get("/api/observations", params={"project": P}).json()["items"]
    assert {o["id"] for o in obs} == {old_cmd, old_edit}
    # A second pass finds nothing new.
    again = client.post("/api/decay/run").json()
    assert again["memories"]["archived"] == 0 and again["observations"]["archived"] == 0
    status = client.get("/api/decay").json()
    assert status["policy"]["memory_half_lives_days"] == [7, 14, 30, 90, 365]
    assert status["policy"]["clock"] == "active_days"
    assert status["policy"]["archives"] == ["expired", "cap"]
    assert status["service"]["runs"] == 2


def test_an_import_of_dated_history_archives_nothing(client: TestClient) -> None:
    """Dated turns of a 2022-2023 conversation (LoCoMo-like) and their tool calls, imported through
    the API: one pass archives none of them (it archived 3,119 of 3,122 when age counted)."""
    start = datetime(2022, 5, 1, tzinfo=UTC)
    ids = []
    for i in range(240):
        when = (start + timedelta(days=12 * (i // 8), minutes=i)).isoformat()
        ids.append(memory(client, f"speaker {i % 2}: turn {i} of session {i // 8}",
                          importance=1 + (i % 3 == 0), created_at=when)["id"])  # fmt: skip
    for i in range(60):
        when = (start + timedelta(days=5 * i)).isoformat()
        observation(client, f"pytest -q run {i}", created_at=when)
    result = client.post("/api/decay/run").json()
    assert result["memories"]["scanned"] == 240 and result["observations"]["scanned"] == 60
    assert result["memories"]["archived"] == 0 and result["observations"]["archived"] == 0
    items = client.get("/api/memories", params={"project": P, "limit": 500}).json()["items"]
    assert len(items) == 240 and not any(m["archived"] for m in items)
    # Retention still ranks within the history: the last session is fresh, the first is not.
    retention = {m["id"]: m["retention"] for m in items}
    assert retention[ids[-1]] == 1.0 and retention[ids[0]] < 0.1


def test_a_project_idle_60_days_archives_nothing(client: TestClient) -> None:
    """Two weeks of work that ended 60 days ago: nothing is archived at the return, and the
    history kept the retention it had the day work stopped."""
    first = memory(client, "Decided: the queue retries three times", importance=2,
                   created_at=ago(74))  # fmt: skip
    last = memory(client, "Use make dev for local runs", importance=1, created_at=ago(60))
    for day in range(74, 59, -1):
        for i in range(5):
            observation(client, f"npm test day {day} #{i}", created_at=ago(day + i / 100))
            observation(client, f"Edit src/{day}_{i}.ts", "file_write", created_at=ago(day))
    result = client.post("/api/decay/run").json()
    assert result["memories"]["archived"] == 0 and result["observations"]["archived"] == 0
    assert result["observations"]["scanned"] == 150
    got = {m["id"]: m["retention"] for m in client.get("/api/memories").json()["items"]}
    assert got[last["id"]] == 1.0
    # 14 active days behind the first memory (half-life 14), none of the 60 idle ones.
    assert got[first["id"]] == pytest.approx(0.5, abs=0.04)


def test_restored_items_stay_restored(client: TestClient) -> None:
    m = memory(client, "Freeze until the release", importance=1, expires_at=ago(1))
    o = observation(client, "npm test", created_at=ago(30))
    client.post("/api/decay/run")
    assert client.get(f"/api/memories/{m['id']}").json()["archived"] is True
    client.post(f"/api/observations/{o}/archive")
    restored = client.post(f"/api/memories/{m['id']}/restore").json()
    assert restored["archived"] is False and restored["retention"] == 1.0
    r = client.post(f"/api/observations/{o}/restore")
    assert r.status_code == 200 and r.json()["archived"] is False
    client.post("/api/decay/run")
    assert client.get(f"/api/memories/{m['id']}").json()["archived"] is False
    assert client.get(f"/api/observations/{o}").json()["archived"] is False


def test_decay_run_for_one_project_and_bad_input(client: TestClient) -> None:
    memory(client, "Expired here", importance=1, expires_at=ago(1))
    other = client.post(
        "/api/memories",
        json={
            "kind": "fact",
            "content": "Expired there",
            "project": "/other",
            "importance": 1,
            "expires_at": ago(1),
        },
    ).json()
    r = client.post("/api/decay/run", json={"project": P}).json()
    assert r["memories"]["archived"] == 1 and r["memories"]["scanned"] == 1
    assert client.get(f"/api/memories/{other['id']}").json()["archived"] is False
    missing = client.post("/api/decay/run", json={"project": "/nope"})
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "project"
    bad = client.post("/api/decay/run", json={"dry_run": "yes"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "dry_run"


def test_caps_archive_the_overflow_chatter_first_then_lowest_retention(backend: str) -> None:
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
        # Exactly the overflow goes, command chatter first: every edit and the newest 5 stay.
        assert first["observations"]["evicted"] == 15
        assert live_ids() == {*commands[-5:], *edits}
        # Over the cap again: the rest of the chatter, then the edits that faded most (the
        # project was worked on since them), whatever their calendar age.
        old_edits = [
            observation(client, f"old edit {i}", "file_write", created_at=ago(40 - i))
            for i in range(9)
        ]
        second = client.post("/api/decay/run").json()
        assert second["observations"]["evicted"] == 9
        assert live_ids() == {*edits, *old_edits[4:]}
        with opened_store(settings) as store:
            archived = "SELECT archive_reason FROM observations WHERE archived_at IS NOT NULL"
            reasons = {r[0] for r in rows(store, archived)}
        assert reasons == {"cap"}


def test_6000_observations_under_a_cap_of_5000_archive_exactly_1000_chatter_first(
    backend: str,
) -> None:
    """A month of work, 1,200 of 6,000 observations tool chatter: the pass archives exactly the
    1,000 over the cap, all of them chatter, the most faded first."""
    with app_client(obs_cap_per_project=5000, decay_first_run_seconds=3600.0) as (client, settings):
        # The project, made by a memory: an observation posted through the API would schedule
        # the cap check that follows new observations, and on a slow machine that check could
        # run after the rows below are in and archive the 1,000 before the pass under test.
        made = client.post("/api/memories", json={"project": P, "content": "seed", "kind": "fact"})
        assert made.status_code == 201, made.text
        types = ["command", "mcp", "research", "other", "command"] + ["file_write"] * 15
        types += ["note", "web", "delegation", "file_write", "note"]
        with opened_store(settings) as store:
            assert store.backend == backend
            pid = value(store, "SELECT id FROM projects WHERE key = ?", (P,))
            now = int(datetime.now(UTC).timestamp() * 1000)
            store.write_sync(
                lambda db: db.executemany(
                    "INSERT INTO observations(project_id, type, title, content_hash, importance, "
                    "created_at) VALUES (?, ?, ?, ?, 2, ?)",
                    [(pid, types[i % 25], f"obs {i}", f"h{i}", now - (5999 - i) * 432_000)
                     for i in range(6000)],
                )
            )  # fmt: skip
            chatter = {
                r[0]
                for r in rows(
                    store,
                    "SELECT id FROM observations WHERE type IN ('command','mcp','research','other')",
                )
            }
        assert len(chatter) == 1200
        result = client.post("/api/decay/run").json()
        assert result["observations"]["scanned"] == 6000
        assert result["observations"]["archived"] == result["observations"]["evicted"] == 1000
        with opened_store(settings) as store:
            archived = "SELECT id FROM observations WHERE archived_at IS NOT NULL ORDER BY id"
            gone = [r[0] for r in rows(store, archived)]
        assert len(gone) == 1000 and set(gone) <= chatter
        # The most faded chatter goes (ids follow time): the oldest half of it all, the newest
        # none of it.
        in_time = sorted(chatter)
        assert set(in_time[:600]) <= set(gone) and not set(in_time[-40:]) & set(gone)


def test_caps_are_enforced_soon_after_new_observations(backend: str) -> None:
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


def test_scheduled_pass_runs_in_the_worker(backend: str) -> None:
    with app_client(decay_first_run_seconds=0.0, decay_interval_seconds=0.2) as (client, _settings):
        m = memory(client, "Expired fact", importance=1, expires_at=ago(1))

        def archived() -> bool:
            return bool(client.get(f"/api/memories/{m['id']}").json()["archived"])

        assert wait_for(archived)
        assert client.get("/api/decay").json()["service"]["runs"] >= 1


def test_observation_archive_restore_forget(
    client: TestClient, store: Backend, backend: str
) -> None:
    oid = observation(client, "grep -rn zebracorn src", body="zebracorn found in 3 files")
    keep = observation(client, "unrelated command")
    r = client.post(f"/api/observations/{oid}/archive")
    assert r.status_code == 200 and r.json()["archived"] is True
    listed = client.get("/api/observations", params={"project": P}).json()["items"]
    assert [o["id"] for o in listed] == [keep]
    everything = client.get("/api/observations", params={"project": P, "include_archived": "true"})
    assert {o["id"] for o in everything.json()["items"]} == {oid, keep}
    assert client.post(f"/api/observations/{oid}/restore").json()["archived"] is False
    execute(
        store,
        "INSERT INTO embeddings(item_kind, item_id, project_id, model, dim, vector, created_at) "
        "VALUES ('observation', ?, NULL, 'm', 1, ?, 0)",
        (oid, b"\x00\x00\x00\x00"),
    )
    gone = client.delete(f"/api/observations/{oid}")
    assert gone.status_code == 200 and gone.json() == {"id": oid, "deleted": True}
    assert client.get(f"/api/observations/{oid}").status_code == 404
    assert client.delete(f"/api/observations/{oid}").status_code == 404
    assert client.post(f"/api/observations/{oid}/archive").status_code == 404
    assert client.post(f"/api/observations/{oid}/restore").status_code == 404
    assert value(store, "SELECT COUNT(*) FROM observations WHERE id = ?", (oid,)) == 0
    assert value(store, "SELECT COUNT(*) FROM embeddings") == 0
    if backend == "sqlite":  # the FTS5 table (PostgreSQL's keyword index lives in the worker)
        fts = "SELECT COUNT(*) FROM search_index WHERE search_index MATCH 'zebracorn'"
        assert value(store, fts) == 0
        kept = "SELECT COUNT(*) FROM search_index WHERE kind = 'observation' AND item_id = ?"
        assert value(store, kept, (oid,)) == 0
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


def test_compress_with_stored_embeddings(client: TestClient, store: Backend) -> None:
    texts = [
        "Run the database migrations before starting the API server",
        "Before starting the API server run the database migrations first",
        "Frontend bundles are built with Vite",
    ]
    saved = [memory(client, t, kind="lesson", supersede=False) for t in texts]
    vectors = FakeEmbedder(256).embed(texts)
    for row, vector in zip(saved, vectors, strict=True):
        execute(
            store,
            "INSERT INTO embeddings(item_kind, item_id, project_id, model, dim, vector, "
            "created_at) VALUES ('memory', ?, 1, 'fake-hash-256', 256, ?, 0)",
            (row["id"], to_blob(vector)),
        )
    plan = client.post("/api/compress", json={"project": P, "dry_run": True}).json()
    assert plan["method"] == "embeddings" and plan["note"] is None and plan["embedded"] == 3
    assert [(m["archive_id"], m["method"]) for m in plan["merges"]] == [
        (saved[0]["id"], "embeddings")
    ]
    assert plan["merges"][0]["similarity"] >= 0.88
    done = client.post("/api/compress", json={"project": P}).json()
    assert done["merged"] == 1
    kept = client.get(f"/api/memories/{saved[1]['id']}").json()
    assert kept["content"] == texts[1]  # nothing new to add: the text is unchanged
    assert client.get(f"/api/memories/{saved[0]['id']}").json()["archive_reason"] == "merged"


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


def test_compress_never_chains_dated_imports(client: TestClient, store: Backend) -> None:
    """Imported history (each memory carries its own date) is true at its time: compression
    neither chains two dated memories into an update nor folds one into the other."""
    old = memory(
        client, "Use PostgreSQL 15 for the database server", created_at="2022-03-01T10:00:00Z"
    )
    new = memory(
        client, "Use PostgreSQL 16 for the database server", created_at="2023-03-01T10:00:00Z"
    )
    done = client.post("/api/compress", json={"project": P, "dry_run": False}).json()
    assert done["superseded"] == 0 and done["supersessions"] == [] and done["merged"] == 0
    for row in (old, new):
        got = client.get(f"/api/memories/{row['id']}").json()
        assert got["superseded_by"] is None and got["archived"] is False
    # Stated live again, the old value is current, no longer only history.
    assert memory(client, "Use PostgreSQL 15 for the database server")["id"] == old["id"]
    dated = dict(rows(store, "SELECT id, dated FROM memories"))
    assert dated == {old["id"]: 0, new["id"]: 1}
