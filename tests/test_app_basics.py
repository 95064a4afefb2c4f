import pytest
from starlette.testclient import TestClient

pytestmark = pytest.mark.both_backends


def test_health_needs_no_token(anon_client: TestClient) -> None:
    r = anon_client.get("/health")
    assert r.status_code == 200
    assert r.json() == {"ok": True, "version": r.json()["version"]}


def test_api_needs_token(anon_client: TestClient) -> None:
    r = anon_client.get("/api/status")
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"


def test_observation_roundtrip_and_idempotency(client: TestClient) -> None:
    payload = {"project": "/r/a", "type": "command", "title": "pytest -q", "event_id": "ev-1"}
    first = client.post("/api/observations", json=payload)
    assert first.status_code == 201
    again = client.post("/api/observations", json=payload)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["id"] == first.json()["id"]
    listed = client.get("/api/observations", params={"project": "/r/a"}).json()["items"]
    assert [o["id"] for o in listed] == [first.json()["id"]]
