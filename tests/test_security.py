"""Every route the app serves, walked from app.routes (so routes added later are covered too):
no token -> 401 unless public, wrong token -> 401, forged Host -> 421 everywhere, cross-origin
writes -> 403, oversize bodies -> 413. All refusals use the JSON error shape."""

from __future__ import annotations

import re

import pytest
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.app import create_app
from worker.auth import is_public
from worker.settings import load_settings

pytestmark = pytest.mark.both_backends

UNSAFE = ("POST", "PUT", "PATCH", "DELETE")
_PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")


def concrete(path: str) -> str:
    """A request path for a route: ints as 1, strings as 'x'."""
    return _PARAM.sub(lambda m: "1" if m.group(2) == "int" else "x", path)


def _routes() -> list[tuple[str, str, str]]:
    settings = load_settings({"CAIRN_HOME": "/nonexistent/cairn-collect"})
    out = []
    for route in create_app(settings).routes:
        if isinstance(route, Mount):
            out.append(("GET", route.path + "/cairn.css", route.path))
            continue
        assert isinstance(route, Route)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            out.append((method, concrete(route.path), route.path))
    return out


ROUTES = _routes()
IDS = [f"{m} {template}" for m, _, template in ROUTES]


# One app per module and backend rather than per test (~300 tests): the requests here are refused by the
# middleware before any handler or rate limit runs, so they change nothing in the app. The
# exceptions are the few public routes (health, login page, a wrong login, an unknown login
# link, static files), each asked once per module: their handlers run, and at most two such
# requests count against the login rate limit, far from it.
@pytest.fixture
def client(module_clients: tuple[TestClient, TestClient]) -> TestClient:
    return module_clients[0]


@pytest.fixture
def anon_client(module_clients: tuple[TestClient, TestClient]) -> TestClient:
    return module_clients[1]


@pytest.mark.parametrize(("method", "path", "template"), ROUTES, ids=IDS)
def test_no_token_is_401_except_public_routes(
    anon_client: TestClient, method: str, path: str, template: str
) -> None:
    r = anon_client.request(method, path)
    if is_public(path):
        # Public routes answer on their own terms (a bad login link is their own 401).
        assert r.status_code < 500
        if (method, path) in (("GET", "/health"), ("GET", "/login"), ("GET", "/favicon.ico")):
            assert r.status_code == 200, f"{method} {path} is public"
        return
    assert r.status_code == 401, f"{method} {path} answered {r.status_code} without a token"
    assert r.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(("method", "path", "template"), ROUTES, ids=IDS)
def test_wrong_token_is_401(anon_client: TestClient, method: str, path: str, template: str) -> None:
    if is_public(path):
        return
    for headers in (
        {"Authorization": "Bearer wrong"},
        {"X-Cairn-Token": "wrong"},
        {"Cookie": "cairn_session=wrong"},
    ):
        r = anon_client.request(method, path, headers=headers)
        assert r.status_code == 401, (method, path, headers)


@pytest.mark.parametrize(("method", "path", "template"), ROUTES, ids=IDS)
def test_forged_host_is_421_everywhere(
    client: TestClient, method: str, path: str, template: str
) -> None:
    for host in ("evil.example", "127.0.0.1.nip.io:37800", "localhost.evil.example"):
        r = client.request(method, path, headers={"Host": host})
        assert r.status_code == 421, (method, path, host)
        assert r.json()["error"]["code"] == "misdirected_request"


UNSAFE_ROUTES = [(m, p, t) for m, p, t in ROUTES if m in UNSAFE]


@pytest.mark.parametrize(
    ("method", "path", "template"), UNSAFE_ROUTES, ids=[f"{m} {t}" for m, _, t in UNSAFE_ROUTES]
)
def test_cross_origin_writes_are_403(
    client: TestClient, method: str, path: str, template: str
) -> None:
    r = client.request(method, path, headers={"Origin": "https://evil.example"}, json={})
    assert r.status_code == 403, (method, path, r.status_code)
    assert r.json()["error"]["code"] == "forbidden"


@pytest.mark.parametrize(
    ("method", "path", "template"), UNSAFE_ROUTES, ids=[f"{m} {t}" for m, _, t in UNSAFE_ROUTES]
)
def test_oversize_bodies_are_413(client: TestClient, method: str, path: str, template: str) -> None:
    body = b"x" * (client.app.state.settings.limits.max_body_bytes + 1)  # type: ignore[attr-defined]
    r = client.request(method, path, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 413, (method, path, r.status_code)


def test_every_refusal_carries_the_security_headers(backend: str) -> None:
    settings = load_settings()
    with TestClient(create_app(settings), base_url=BASE_URL) as anon:
        for r in (anon.get("/api/status"), anon.get("/", headers={"Host": "evil"})):
            assert "default-src 'self'" in r.headers["content-security-policy"]
            assert r.headers["x-frame-options"] == "DENY"
