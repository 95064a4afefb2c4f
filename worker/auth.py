"""Token storage and the security middleware: Host check, token/cookie auth, Origin check, headers."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Mapping
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.clock import now_ms
from worker.errors import PayloadTooLarge, error_body
from worker.home import ensure_private_dir, private_temp

log = logging.getLogger(__name__)

COOKIE_NAME = "cairn_session"
CSRF_HEADER = "x-cairn-csrf"
PUBLIC_PATHS = ("/health", "/login", "/login/", "/favicon.ico", "/static/")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
# Headers the checks below read: a second copy would make "which one counts" ambiguous (a proxy
# or a browser may read the first where we read the last), so a request repeating one is refused.
SINGLE_HEADERS = (
    "host",
    "origin",
    "sec-fetch-site",
    "authorization",
    "x-cairn-token",
    CSRF_HEADER,
    "content-length",
)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'"
)
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


class TokenKeeper:
    """The token file ($CAIRN_HOME/token, mode 0600); re-read when it changes on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._token = ""
        self._stamp: tuple[int, int] | None = None

    def ensure(self) -> None:
        ensure_private_dir(self.path.parent)
        if not self.path.exists():
            self._write(secrets.token_urlsafe(32))
        else:
            os.chmod(self.path, 0o600)
        self._load()

    def _write(self, token: str) -> None:
        with private_temp(self.path) as handle:
            handle.write(token + "\n")

    def _load(self) -> None:
        st = self.path.stat()
        self._token = self.path.read_text().strip()
        self._stamp = (st.st_mtime_ns, st.st_ino)

    def current(self) -> str:
        try:
            st = self.path.stat()
            if (st.st_mtime_ns, st.st_ino) != self._stamp:
                self._load()
        except OSError:
            pass  # keep the last good token if the file vanished mid-rotation
        return self._token

    def rotate(self) -> str:
        self._write(secrets.token_urlsafe(32))
        self._load()
        return self._token

    def matches(self, candidate: str) -> bool:
        token = self.current()
        return bool(token) and hmac.compare_digest(candidate.encode(), token.encode())

    def derived(self, purpose: str) -> str:
        """A value bound to the token (CSRF, login digests): rotating the token invalidates it."""
        return hmac.new(self.current().encode(), purpose.encode(), hashlib.sha256).hexdigest()


class DashboardLogins:
    """One server-side session per dashboard login ($CAIRN_HOME/logins.json, mode 0600).

    The cookie is a random id given to that browser alone; the file keeps only HMAC(token, id)
    and its expiry. Logging out deletes that entry (the other browsers stay logged in), and
    rotating the token voids every entry at once, since no digest matches under the new token.
    """

    def __init__(self, path: Path, tokens: TokenKeeper, *, max_age_s: int, max_count: int) -> None:
        self.path = path
        self.tokens = tokens
        self.max_age_ms = max_age_s * 1000
        self.max_count = max(1, max_count)
        self._expiry: dict[str, int] = {}

    def load(self) -> None:
        try:
            raw = json.loads(self.path.read_text())
            entries = raw.get("logins", {}) if isinstance(raw, dict) else {}
            self._expiry = {
                str(k): int(v) for k, v in entries.items() if isinstance(v, int | float)
            }
            os.chmod(self.path, 0o600)
        except FileNotFoundError:
            self._expiry = {}
        except (OSError, ValueError, AttributeError):
            log.warning("unreadable %s: every dashboard login starts over", self.path)
            self._expiry = {}

    def _digest(self, login_id: str) -> str:
        return self.tokens.derived("login:" + login_id)

    def create(self) -> str:
        """A new login's cookie value."""
        login_id = secrets.token_urlsafe(32)
        now = now_ms()
        live = {k: v for k, v in self._expiry.items() if v > now}
        # Past the cap the logins closest to expiry (the oldest) go first.
        for key in sorted(live, key=live.__getitem__)[: max(0, len(live) - self.max_count + 1)]:
            del live[key]
        live[self._digest(login_id)] = now + self.max_age_ms
        self._expiry = live
        self._save()
        return login_id

    def matches(self, cookie: str) -> bool:
        if not cookie or len(cookie) > 200:
            return False
        expires = self._expiry.get(self._digest(cookie))
        return expires is not None and expires > now_ms()

    def revoke(self, cookie: str) -> bool:
        if self._expiry.pop(self._digest(cookie), None) is None:
            return False
        self._save()
        return True

    def _save(self) -> None:
        body = json.dumps({"version": 1, "logins": self._expiry}, separators=(",", ":"))
        with private_temp(self.path) as handle:
            handle.write(body)


def host_is_loopback(host: str) -> bool:
    host = host.strip().lower()
    if host.startswith("["):
        name = host[: host.find("]") + 1] if "]" in host else host
        rest = host[len(name) :]
    else:
        name, _, port = host.partition(":")
        rest = f":{port}" if port else ""
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return False
    return name in LOOPBACK_HOSTS


def _headers(scope: Scope) -> tuple[dict[str, str], str | None]:
    """The request headers by lower-case name, and the first of SINGLE_HEADERS sent twice."""
    out: dict[str, str] = {}
    repeated: str | None = None
    for key, value in scope.get("headers", []):
        name = key.decode("latin-1").lower()
        if repeated is None and name in out and name in SINGLE_HEADERS:
            repeated = name
        out[name] = value.decode("latin-1")
    return out, repeated


def is_public(path: str) -> bool:
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in PUBLIC_PATHS)


class SecurityMiddleware:
    """Pure ASGI: refuse foreign Hosts (421), missing token (401), cross-origin writes (403),
    oversized bodies (413); add security headers to every response."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers.extend(h for h in SECURITY_HEADERS if h[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        headers, repeated = _headers(scope)
        path: str = scope.get("path", "")
        method: str = scope.get("method", "GET")

        if repeated is not None:
            await _reject(
                send_with_headers,
                400,
                "bad_request",
                f"the {repeated!r} header appears more than once; send it once",
            )
            return

        if not host_is_loopback(headers.get("host", "")):
            await _reject(
                send_with_headers,
                421,
                "misdirected_request",
                "Host header must be a loopback name (127.0.0.1, localhost, [::1])",
            )
            return

        cairn = scope.get("state", {}).get("cairn")
        tokens: TokenKeeper | None = getattr(cairn, "tokens", None)
        auth_via = _authenticate(headers, tokens, getattr(cairn, "logins", None))
        scope.setdefault("state", {})["auth_via"] = auth_via
        if auth_via is None and not is_public(path):
            if wants_html(headers, path) and method in ("GET", "HEAD"):
                # Serve the login page in place (status 401), remembering where to go next.
                await self.app(_login_scope(scope, path), receive, send_with_headers)
            else:
                await _reject(
                    send_with_headers,
                    401,
                    "unauthorized",
                    "missing or wrong token: send 'Authorization: Bearer <token>' "
                    "(the token is in $CAIRN_HOME/token)",
                )
            return

        if method in UNSAFE_METHODS:
            if from_another_site(headers):
                await _reject(
                    send_with_headers,
                    403,
                    "forbidden",
                    "cross-origin request refused: state-changing requests must come "
                    "from the worker's own origin",
                )
                return
            if auth_via == "cookie" and not path.startswith("/login") and tokens is not None:
                csrf = headers.get(CSRF_HEADER, "")
                if not hmac.compare_digest(csrf.encode(), tokens.derived("csrf").encode()):
                    await _reject(
                        send_with_headers,
                        403,
                        "csrf",
                        "missing or wrong CSRF token (reload the page)",
                    )
                    return

        length = headers.get("content-length")
        if length is not None:
            if not (length.isascii() and length.isdigit()):
                await _reject(send_with_headers, 400, "bad_request", "invalid Content-Length")
                return
            if int(length) > self.max_body_bytes:
                await _reject(
                    send_with_headers,
                    413,
                    "payload_too_large",
                    f"request body is {length} bytes; the limit is {self.max_body_bytes}",
                )
                return

        received = 0

        async def bounded_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise PayloadTooLarge(
                        f"request body exceeds the limit of {self.max_body_bytes} bytes"
                    )
            return message

        await self.app(scope, bounded_receive, send_with_headers)


def session_cookie(cookie_header: str | None) -> str | None:
    """The dashboard login cookie's value from a Cookie header, if any."""
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except Exception:
        return None
    morsel = jar.get(COOKIE_NAME)
    return None if morsel is None else morsel.value


def _authenticate(
    headers: dict[str, str], tokens: TokenKeeper | None, logins: DashboardLogins | None
) -> str | None:
    if tokens is None:
        return None
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer " and tokens.matches(auth[7:].strip()):
        return "bearer"
    header_token = headers.get("x-cairn-token")
    if header_token and tokens.matches(header_token.strip()):
        return "header"
    cookie = session_cookie(headers.get("cookie"))
    if cookie is not None and logins is not None and logins.matches(cookie):
        return "cookie"
    return None


def _same_origin(origin: str, host: str) -> bool:
    return origin.lower() in (f"http://{host.lower()}",)


def from_another_site(headers: Mapping[str, str]) -> bool:
    """A browser request started by another page: a foreign Origin, or Sec-Fetch-Site saying
    cross-site or same-site (another port on 127.0.0.1 is the same site, not the same origin).
    A request without these headers (curl, hooks, a typed address) is not."""
    origin = headers.get("origin")
    if origin is not None and not _same_origin(origin, headers.get("host", "")):
        return True
    return headers.get("sec-fetch-site", "") in ("cross-site", "same-site")


def wants_html(headers: Mapping[str, str], path: str) -> bool:
    """A browser asking for a page (never for /api/ or the OpenAPI document)."""
    if path.startswith("/api/") or path == "/openapi.json":
        return False
    return "text/html" in headers.get("accept", "")


async def _reject(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _login_scope(scope: Scope, path: str) -> Scope:
    """The request re-pointed at GET /login?next=<what was asked for>."""
    from urllib.parse import urlencode

    query = scope.get("query_string", b"").decode("latin-1")
    target = path + ("?" + query if query else "")
    state = dict(scope.get("state", {}))
    state["login_required"] = True
    return {
        **scope,
        "method": "GET",
        "path": "/login",
        "raw_path": b"/login",
        "query_string": urlencode({"next": target}).encode(),
        "state": state,
    }


class LoginLinks:
    """One-time login nonces held in memory: single use, short expiry, gone on restart."""

    def __init__(self, ttl_seconds: int) -> None:
        self.ttl = ttl_seconds
        self._pending: dict[str, tuple[float, str]] = {}

    def create(self, next_path: str) -> tuple[str, float]:
        self._expire()
        nonce = secrets.token_urlsafe(32)
        expires = time.monotonic() + self.ttl
        self._pending[nonce] = (expires, next_path)
        return nonce, expires

    def consume(self, nonce: str) -> str | None:
        """The page to open if `nonce` is valid (it is spent either way)."""
        self._expire()
        entry = self._pending.pop(nonce, None)
        return entry[1] if entry is not None else None

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, (exp, _) in self._pending.items() if exp <= now]:
            del self._pending[key]

    def status(self) -> dict[str, Any]:
        self._expire()
        return {"pending": len(self._pending), "ttl_seconds": self.ttl}
