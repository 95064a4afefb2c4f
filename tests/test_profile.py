"""Project profile: pure builder, rendering, caching and the two endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.backends import execute
from tests.conftest import BASE_URL
from worker.app import create_app
from worker.memory.profile import build_profile, command_kind, language_of, render_profile
from worker.settings import load_settings
from worker.store.backend import Backend

pytestmark = pytest.mark.both_backends

ROOT = "/work/shop"


def _obs(client: TestClient, sid: str, **item: Any) -> None:
    r = client.post("/api/observations", json={"project": ROOT, "session_id": sid, **item})
    assert r.status_code == 201, r.text


def _add_memory(store: Backend, kind: str, content: str, importance: int) -> None:
    """A memory written under the API (so no event tells the profile cache it changed)."""
    execute(
        store,
        "INSERT INTO memories(project_id, kind, content, content_hash, importance, "
        "created_at, updated_at) VALUES ((SELECT id FROM projects WHERE key = ?), "
        "?, ?, ?, ?, 1, 1)",
        (ROOT, kind, content, content[:32], importance),
    )


@pytest.mark.sqlite_only("no database: pure functions of what they are given")
def test_language_and_command_classification() -> None:
    assert language_of("src/app.py") == "Python"
    assert language_of("web/App.TSX") == "TypeScript"
    assert language_of("Dockerfile") == "Dockerfile"
    assert language_of("README") is None
    assert command_kind("python -m pytest -q tests") == "test"
    assert command_kind("npm run test:unit") == "test"
    assert command_kind("ruff check .") == "lint"
    assert command_kind("mypy --strict worker") == "typecheck"
    assert command_kind("cargo build --release") == "build"
    assert command_kind("git push") is None


@pytest.mark.sqlite_only("no database: pure functions of what they are given")
def test_build_profile_static_and_dynamic() -> None:
    observations = [
        {"type": "file_write", "files": [f"{ROOT}/src/a.py"], "created_at": "t1"},
        {"type": "research", "files": [f"{ROOT}/src/b.py", f"{ROOT}/web/x.ts"]},
        {"type": "file_write", "files": [f"{ROOT}/setup.cfg"]},
        {"type": "command", "title": "$ pytest -q", "meta": {"exit_code": 0}, "created_at": "t2"},
        {"type": "command", "title": "$ pytest -q", "meta": {"exit_code": 0}, "created_at": "t3"},
        {"type": "command", "title": "$ make build", "meta": {"exit_code": 2}},
        {"type": "command", "title": "$ ls -la", "meta": {"exit_code": 0}},
    ]
    profile = build_profile(
        {"id": 1, "key": ROOT, "name": "shop"},
        observations,
        [{"text": "Add coupons"}, {"text": "ok"}],
        [
            {"id": 1, "kind": "decision", "content": "Use Postgres 16", "importance": 5},
            {"id": 2, "kind": "preference", "content": "Tabs, not spaces", "importance": 4},
        ],
        {"id": "s1", "plan": [{"content": "Write tests", "status": "in_progress"}]},
        [{"type": "file_write", "files": [f"{ROOT}/src/a.py"]}],
    )
    static = profile["static"]
    assert static["languages"][0] == {"language": "Python", "files": 2, "share": 0.67}
    assert static["commands"] == [
        {"command": "pytest -q", "kind": "test", "runs": 2, "last_at": "t3"}
    ]
    assert static["folders"] == [{"folder": "src/", "files": 2}, {"folder": "web/", "files": 1}]
    assert static["decisions"][0]["content"] == "Use Postgres 16"
    dynamic = profile["dynamic"]
    assert dynamic["current_task"] == "Add coupons"
    assert dynamic["in_progress"] == ["Write tests"]
    assert dynamic["files_in_flight"] == ["src/a.py"]
    text = render_profile(profile)
    assert text.splitlines()[0] == "**Project shop:** Python 67%, TypeScript 33%"
    assert "`pytest -q` (test)" in text and "- Use Postgres 16" in text
    assert "**Current task:** Add coupons" in text
    short = render_profile(profile, max_chars=90)
    assert short == "\n".join(text.splitlines()[:2]) and len(short) <= 90
    assert render_profile(profile, max_chars=5) == ""


@pytest.mark.sqlite_only("no database: pure functions of what they are given")
def test_render_empty_profile_is_empty() -> None:
    assert render_profile({"project": {"name": "x"}, "static": {}, "dynamic": {}}) == ""
    # a prompt alone (no files, commands, decisions, plan) is not a profile worth injecting
    only_task = {"project": {"name": "x"}, "static": {}, "dynamic": {"current_task": "hi"}}
    assert render_profile(only_task) == ""
    planned = {"static": {}, "dynamic": {"current_task": "ship", "in_progress": ["tests"]}}
    assert render_profile(planned) == "**Current task:** ship\n- in progress: tests"


def test_profile_endpoint_caches_and_invalidates(client: TestClient, store: Backend) -> None:
    client.post("/api/sessions", json={"session_id": "p1", "project": ROOT})
    client.post("/api/prompts", json={"session_id": "p1", "text": "Speed up the checkout"})
    _obs(client, "p1", type="file_write", title="Edit", files=[f"{ROOT}/src/cart.py"])
    _obs(client, "p1", type="command", title="$ pytest", body="exit code: 0")
    pid = client.get("/api/projects").json()["items"][0]["id"]

    first = client.get(f"/api/projects/{pid}/profile")
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["cached"] is False
    assert body["static"]["commands"][0]["command"] == "pytest"
    assert body["dynamic"]["current_task"] == "Speed up the checkout"
    assert "Python 100%" in body["text"]
    assert client.get(f"/api/projects/{pid}/profile").json()["cached"] is True
    assert client.get(f"/api/profile?project={ROOT}").json()["cached"] is True

    # a new observation shows at once in the dynamic part; the static part waits for
    # profile_min_refresh_seconds (60 s by default) so a busy session does not rescan each time
    _obs(client, "p1", type="file_write", title="Edit", files=[f"{ROOT}/web/app.ts"])
    again = client.get(f"/api/projects/{pid}/profile").json()
    assert again["cached"] is True
    assert again["dynamic"]["files_in_flight"][0] == "web/app.ts"
    assert [x["language"] for x in again["static"]["languages"]] == ["Python"]
    # so does a new important decision
    _add_memory(store, "decision", "Deploy with blue-green releases", 5)
    _add_memory(store, "decision", "a minor one", 2)
    with_decision = client.get(f"/api/projects/{pid}/profile").json()
    assert [d["content"] for d in with_decision["static"]["decisions"]] == [
        "Deploy with blue-green releases"
    ]
    # and a plan update
    client.put(
        "/api/sessions/p1/plan", json={"plan": [{"content": "Profile", "status": "in_progress"}]}
    )
    planned = client.get(f"/api/projects/{pid}/profile").json()
    assert planned["cached"] is False and planned["dynamic"]["in_progress"] == ["Profile"]
    assert client.get(f"/api/projects/{pid}/profile?refresh=true").json()["cached"] is False


def test_profile_unknown_project(client: TestClient) -> None:
    r = client.get("/api/projects/999/profile")
    assert r.status_code == 404 and r.json()["error"]["field"] == "project"
    r = client.get("/api/profile?project=nope")
    assert r.status_code == 404
    r = client.get("/api/profile")
    assert r.status_code == 400 and r.json()["error"]["field"] == "project"


def test_new_observations_refresh_the_static_part(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    monkeypatch.setenv("CAIRN_PROFILE_MIN_REFRESH_SECONDS", "0")
    settings = load_settings()
    with TestClient(create_app(settings), base_url=BASE_URL) as client:
        client.headers["Authorization"] = f"Bearer {settings.token_path.read_text().strip()}"
        client.post("/api/sessions", json={"session_id": "p2", "project": ROOT})
        _obs(client, "p2", type="file_write", title="Edit", files=[f"{ROOT}/src/a.py"])
        first = client.get(f"/api/profile?project={ROOT}").json()
        assert client.get(f"/api/profile?project={ROOT}").json()["cached"] is True
        _obs(client, "p2", type="file_write", title="Edit", files=[f"{ROOT}/web/b.ts"])
        second = client.get(f"/api/profile?project={ROOT}").json()
        assert second["cached"] is False
        assert [x["language"] for x in first["static"]["languages"]] == ["Python"]
        assert {x["language"] for x in second["static"]["languages"]} == {"Python", "TypeScript"}
