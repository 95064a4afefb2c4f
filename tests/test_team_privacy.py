"""Two workers' apps on one real PostgreSQL database: each user's prompts and tool observations
stay private to them unless shared (a setting), memories are the team's (store/privacy.py,
container.Cairn.reader)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.conftest import running_app
from worker.settings import Settings, TeamSettings


def _worker_settings(base: Settings, home: Path, author: str, **team: bool) -> Settings:
    return dataclasses.replace(base, home=home, author=author, team=TeamSettings(**team))


@pytest.fixture
def team(
    settings: Settings, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, TestClient]]:
    monkeypatch.setenv("CAIRN_DATABASE_URL", pg_url)
    with ExitStack() as stack:
        ann = stack.enter_context(
            running_app(
                _worker_settings(settings, tmp_path / "ann", "ann@acme.dev"), authenticated=True
            )
        )
        bob = stack.enter_context(
            running_app(
                _worker_settings(settings, tmp_path / "bob", "bob@acme.dev", share_prompts=True),
                authenticated=True,
            )
        )
        yield ann, bob


def _session(client: TestClient, sid: str, author: str) -> None:
    r = client.post(
        "/api/sessions",
        json={"session_id": sid, "project": "github.com/acme/app", "author": author},
    )
    assert r.status_code == 201, r.text


@pytest.mark.postgres
def test_prompts_and_observations_stay_private_and_memories_are_shared(
    team: tuple[TestClient, TestClient],
) -> None:
    ann, bob = team
    assert ann.get("/api/status").json()["database"]["backend"] == "postgres"
    _session(ann, "s-ann", "ann@acme.dev")
    prompt = ann.post(
        "/api/prompts", json={"session_id": "s-ann", "text": "half a thought about auth"}
    )
    assert prompt.status_code == 201 and prompt.json()["shared"] is False
    obs = ann.post(
        "/api/observations",
        json={
            "session_id": "s-ann",
            "project": "github.com/acme/app",
            "type": "command",
            "title": "ran ./deploy.sh staging",
            "body": "exit 0",
        },
    )
    assert obs.status_code == 201, obs.text
    oid = obs.json()["id"]
    memory = ann.post(
        "/api/memories",
        json={
            "project": "github.com/acme/app",
            "kind": "decision",
            "content": "Deploys go through the staging pipeline first",
        },
    )
    assert memory.status_code == 201, memory.text

    # Ann sees her own rows.
    assert [o["id"] for o in ann.get("/api/observations").json()["items"]] == [oid]
    assert len(ann.get("/api/sessions/s-ann").json()["prompts"]) == 1
    # Bob sees the session and the memory, never Ann's prompt or observation.
    detail = bob.get("/api/sessions/s-ann").json()
    assert detail["prompts"] == [] and detail["observations"] == []
    assert bob.get("/api/observations").json()["items"] == []
    assert bob.get(f"/api/observations/{oid}").status_code == 404
    assert bob.get("/api/observations", params={"ids": str(oid)}).json()["items"] == []
    mine = bob.get(f"/api/memories/{memory.json()['id']}")
    assert mine.status_code == 200 and mine.json()["author"] == "ann@acme.dev"

    # Bob shares his prompts (CAIRN_TEAM_SHARE_PROMPTS): Ann sees them.
    _session(bob, "s-bob", "bob@acme.dev")
    shared = bob.post("/api/prompts", json={"session_id": "s-bob", "text": "why is staging slow?"})
    assert shared.status_code == 201 and shared.json()["shared"] is True
    assert [p["text"] for p in ann.get("/api/sessions/s-bob").json()["prompts"]] == [
        "why is staging slow?"
    ]
