"""POST /api/login-links: a one-time dashboard login link (what `cairn open` asks for)."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint, with_status
from worker.clock import now_ms, to_iso
from worker.ops.logins import links, safe_next
from worker.settings import Settings

TAG = "auth"


async def create_login_link(call: Call) -> Any:
    cairn = call.cairn
    body = call.body or {}
    target = safe_next(body.get("next"))
    nonce, _ = links(cairn).create(target)
    host = call.request.headers.get("host") or f"127.0.0.1:{cairn.port}"
    ttl = cairn.settings.dashboard.login_link_seconds
    return with_status(
        {
            "url": f"http://{host}/login/link/{nonce}",
            "expires_at": to_iso(now_ms() + ttl * 1000),
            "expires_in_seconds": ttl,
        },
        201,
    )


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "POST",
            "/api/login-links",
            create_login_link,
            "Create a one-time dashboard login link (single use, expires in "
            f"{s.dashboard.login_link_seconds} s)",
            TAG,
            body={
                "type": "object",
                "properties": {
                    "next": {
                        "type": "string",
                        "maxLength": 2000,
                        "description": "Local page to open after login, e.g. /memories",
                    }
                },
            },
            body_required=False,
            status=201,
            rate="login",
        )
    ]
