"""Token keeper and the security middleware: Host, token, cookie + CSRF, Origin, body limit,
security headers on every response (errors included), no CORS."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from worker.auth import CSP, TokenKeeper, host_is_loopback, is_public
from worker.settings import Settings

pytestmark = pytest.mark.both_backends

OBS = {"project": "p", "type": "note", "title": "t"}


@pytest.mark.sqlite_only("no database: the token file")
def test_token_file_is_created_0600_and_reread_after_rotation(tmp_path: Path) -> None:
    keeper = TokenKeeper(tmp_path / "home" / "token")
    keeper.ensure()
    mode = stat.S_IMODE(os.stat(keeper.path).st_mode)
    assert mode == 0o600
    first = keeper.current()
    assert len(first) >= 40 and keeper.matches(first) and not keeper.matches(first + "x")
    # Another process (cairn token --rotate) replaces the file: this keeper follows.
    other = TokenKeeper(keeper.path)
    other.ensure()
    second = other.rotate()
    assert second != first and keeper.current() == second
    assert not keeper.matches(first)
    assert stat.S_IMODE(os.stat(keeper.path).st_mode) == 0o600


@pytest.mark.sqlite_only("no database: the token file")
def test_ensure_tightens_a_loose_token_file(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("abc\n")
    path.chmod(0o644)
    keeper = TokenKeeper(path)
    keeper.ensure()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and keeper.current() == "abc"


@pytest.mark.sqlite_only("no database: the token file")
def test_derived_values_change_with_the_token(tmp_path: Path) -> None:
    keeper = TokenKeeper(tmp_path / "token")
    keeper.ensure()
    csrf, login = keeper.derived("csrf"), keeper.derived("login:x")
    assert csrf != login
    keeper.rotate()
    assert keeper.derived("csrf") != csrf and keeper.derived("login:x") != login


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:37800", True),
        ("localhost:1", True),
        ("LOCALHOST:37800", True),
        ("[::1]:37800", True),
        ("[::1]", True),
        ("evil.com", False),
        ("127.0.0.1.evil.com", False),
        ("localhost.evil.com:37800", False),
        ("127.0.0.1:80@evil.com", False),
        ("127.0.0.1:abc", False),
        ("[::1]evil", False),
        ("", False),
        ("0.0.0.0:37800", False),
    ],
)
@pytest.mark.sqlite_only("no database: is_loopback over a Host header")
def test_host_is_loopback(host: str, ok: bool) -> None:
    assert host_is_loopback(host) is ok


@pytest.mark.sqlite_only("no database: is_public over a path")
def test_public_paths() -> None:
    assert is_public("/health") and is_public("/login") and is_public("/static/x.css")
    assert not is_public("/api/status") and not is_public("/healthz") and not is_public("/")


def test_token_forms(anon_client: TestClient, settings: Settings) -> None:
    token = settings.token_path.read_text().strip()
    assert anon_client.get("/api/status").status_code == 401
    assert (
        anon_client.get("/api/status", headers={"Authorization": "Bearer nope"}).status_code == 401
    )
    assert (
        anon_client.get("/api/status", headers={"Authorization": f"Bearer {token}"}).status_code
        == 200
    )
    assert (
        anon_client.get("/api/status", headers={"authorization": f"bearer {token}"}).status_code
        == 200
    )
    assert anon_client.get("/api/status", headers={"X-Cairn-Token": token}).status_code == 200
    assert (
        anon_client.get("/api/status", headers={"Authorization": f"Basic {token}"}).status_code
        == 401
    )
    assert anon_client.get(f"/api/status?token={token}").status_code == 401  # never in URLs


def test_cookie_auth_needs_csrf_for_writes(anon_client: TestClient, settings: Settings) -> None:
    keeper = TokenKeeper(settings.token_path)
    keeper.ensure()
    login = anon_client.post("/login", data={"token": keeper.current()}, follow_redirects=False)
    assert login.status_code == 303 and anon_client.cookies.get("cairn_session")
    assert anon_client.get("/api/status").status_code == 200
    refused = anon_client.post("/api/observations", json=OBS)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "csrf"
    ok = anon_client.post(
        "/api/observations", json=OBS, headers={"X-Cairn-CSRF": keeper.derived("csrf")}
    )
    assert ok.status_code == 201


def test_forged_host_is_421_before_anything_else(client: TestClient) -> None:
    r = client.get("/api/status", headers={"Host": "attacker.example"})
    assert r.status_code == 421 and r.json()["error"]["code"] == "misdirected_request"
    assert client.get("/health", headers={"Host": "attacker.example:37800"}).status_code == 421


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:9999"},  # another local port is another origin
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_cross_origin_writes_are_403(client: TestClient, headers: dict[str, str]) -> None:
    r = client.post("/api/observations", json=OBS, headers=headers)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"


def test_same_origin_writes_pass(client: TestClient) -> None:
    r = client.post("/api/observations", json=OBS, headers={"Origin": "http://127.0.0.1:37800"})
    assert r.status_code == 201


def test_cross_origin_reads_get_no_cors_headers(client: TestClient) -> None:
    r = client.get("/api/status", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    pre = client.options(
        "/api/observations",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in pre.headers


def test_oversize_bodies_are_413(client: TestClient, settings: Settings) -> None:
    big = b'{"project":"p","type":"note","title":"' + b"x" * settings.limits.max_body_bytes + b'"}'
    r = client.post("/api/observations", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"

    def chunks() -> object:  # no Content-Length: the limit is enforced while reading
        for _ in range(20):
            yield b"x" * (settings.limits.max_body_bytes // 10)

    streamed = client.post(
        "/api/observations", content=chunks(), headers={"Content-Type": "application/json"}
    )  # type: ignore[arg-type]
    assert streamed.status_code == 413 and streamed.json()["error"]["code"] == "payload_too_large"


def test_security_headers_on_every_response(client: TestClient, anon_client: TestClient) -> None:
    responses = [
        client.get("/api/status"),
        client.get("/api/nope"),
        anon_client.get("/api/status"),
        client.get("/health", headers={"Host": "evil"}),
        anon_client.get("/health"),
        client.post("/api/observations", content=b"{"),
    ]
    for r in responses:
        assert r.headers["content-security-policy"] == CSP, r.url
        assert "unsafe-inline" not in CSP and "unsafe-eval" not in CSP
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"


def test_token_never_appears_in_error_bodies(anon_client: TestClient, settings: Settings) -> None:
    token = settings.token_path.read_text().strip()
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    for r in (
        anon_client.get("/api/status", headers={"Authorization": f"Bearer {wrong}"}),
        anon_client.post(
            "/api/observations", content=b"{", headers={"Authorization": f"Bearer {token}"}
        ),
        anon_client.get("/nope", headers={"Authorization": f"Bearer {token}"}),
    ):
        assert token not in r.text and wrong not in r.text
