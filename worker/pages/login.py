"""Login (paste the token or follow a one-time link) and logout."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from worker.auth import COOKIE_NAME, from_another_site, session_cookie
from worker.ops.logins import links, safe_next
from worker.pages.forms import read_form
from worker.pages.render import render

PageHandler = Callable[[Request], Awaitable[Response]]


def with_session_cookie(response: Response, cairn: Any) -> Response:
    response.set_cookie(
        COOKIE_NAME,
        cairn.logins.create(),
        max_age=cairn.settings.dashboard.session_cookie_days * 86400,
        path="/",
        httponly=True,
        samesite="strict",
    )
    return response


def login_form(request: Request, error: str, status: int, next_path: str = "/") -> Response:
    """The login page (with why the last attempt failed, if it did)."""
    return render(
        request,
        "login.html",
        {
            "title": "Log in",
            "next": next_path,
            "error": error,
            "token_path": str(request.state.cairn.settings.token_path),
        },
        status=status,
    )


async def login_page(request: Request) -> Response:
    required = bool(request.scope.get("state", {}).get("login_required"))
    if not required and request.scope.get("state", {}).get("auth_via") is not None:
        return RedirectResponse(safe_next(request.query_params.get("next")), status_code=303)
    return login_form(
        request, "", 401 if required else 200, safe_next(request.query_params.get("next"))
    )


async def login_submit(request: Request) -> Response:
    cairn = request.state.cairn
    form = await read_form(request)
    target = safe_next(form.get("next"))
    if not cairn.tokens.matches(form.get("token", "").strip()):
        return login_form(
            request, "That token is not right. Copy it again from the token file.", 401, target
        )
    return with_session_cookie(RedirectResponse(target, status_code=303), cairn)


async def login_link(request: Request) -> Response:
    cairn = request.state.cairn
    target = links(cairn).consume(request.path_params["nonce"])
    if target is None and request.scope.get("state", {}).get("auth_via") is not None:
        # An old link opened again by a browser that is logged in: the dashboard, not an error.
        return RedirectResponse("/", status_code=303)
    if target is None:
        return login_form(
            request,
            "This login link was already used or has expired. "
            "Run `cairn open` for a new one, or paste the token.",
            401,
        )
    return with_session_cookie(RedirectResponse(target, status_code=303), cairn)


async def logout(request: Request) -> Response:
    cookie = session_cookie(request.headers.get("cookie"))
    if cookie is not None:
        request.state.cairn.logins.revoke(cookie)
    response = Response(status_code=204, headers={"HX-Redirect": "/login"})
    response.delete_cookie(COOKIE_NAME, path="/", httponly=True, samesite="strict")
    return response


def own_site_only(limited: PageHandler) -> PageHandler:
    """Refuse a login attempt another site's page started, before it counts against the login
    rate limit: the limit is per client address, always 127.0.0.1, so any page the user visits
    could otherwise spend the budget (and lock the user out) with a few image tags."""

    async def guarded(request: Request) -> Response:
        if from_another_site(request.headers):
            return login_form(
                request,
                "This login request came from another site and was refused. "
                "Run `cairn open` for a new link, or paste the token.",
                403,
            )
        return await limited(request)

    return guarded


def routes(limit: Callable[[Any], Any]) -> list[BaseRoute]:
    return [
        Route("/login", login_page, methods=["GET"]),
        Route("/login", own_site_only(limit(login_submit)), methods=["POST"]),
        Route("/login/link/{nonce}", own_site_only(limit(login_link)), methods=["GET"]),
        Route("/logout", logout, methods=["POST"]),
    ]
