"""create_app(settings) -> Starlette: the one list of routes, the lifespan and the error handlers."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from slowapi import Limiter
from slowapi.errors import RateLimitExceeded
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from worker import __version__, ratelimit
from worker.api import context as context_api
from worker.api import embeddings as embeddings_api
from worker.api import lifecycle as lifecycle_api
from worker.api import login_links, memories, observations, portability, sessions, system
from worker.api import profile as project_profile
from worker.api import report as report_api
from worker.api import search as search_api
from worker.api import spool as spool_api
from worker.api import summaries as session_summaries
from worker.api import timeline as timeline_api
from worker.api import use as use_api
from worker.api.direct import DirectDispatch
from worker.api.endpoint import Endpoint, make_route
from worker.auth import DashboardLogins, SecurityMiddleware, TokenKeeper, wants_html
from worker.clock import now_ms
from worker.container import Cairn, Events
from worker.errors import (
    BadRequest,
    CairnError,
    Conflict,
    InsufficientStorage,
    ServiceUnavailable,
    error_body,
)
from worker.events import Broadcaster
from worker.home import ensure_home, home_folders
from worker.memory.scheduler import DecayService
from worker.metrics import Metrics, MetricsMiddleware
from worker.pages import routes as dashboard_routes
from worker.pages.outage import outage_page, wants_whole_page
from worker.project_identity import author as git_author
from worker.retrieval.db_keywords import DatabaseKeywords
from worker.retrieval.keyword_index import KeywordIndex
from worker.retrieval.keyword_service import KeywordIndexService
from worker.retrieval.service import EmbeddingService
from worker.runtime import remove_runtime, write_runtime
from worker.settings import Settings
from worker.spool import SpoolReplayer
from worker.store.backend import make_store
from worker.store.errors import (
    InvalidValue,
    RowConflict,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreUnavailable,
)
from worker.team import database_url
from worker.team_feed import TeamFeed

log = logging.getLogger(__name__)


def all_endpoints(settings: Settings) -> list[Endpoint]:
    """Every JSON endpoint, in one list (the OpenAPI document is generated from it)."""
    return [
        *system.endpoints(settings),
        *sessions.endpoints(settings),
        *observations.endpoints(settings),
        *search_api.endpoints(settings),
        *context_api.endpoints(settings),
        *embeddings_api.endpoints(settings),
        *spool_api.endpoints(settings),
        *memories.endpoints(settings),
        *lifecycle_api.endpoints(settings),
        *session_summaries.endpoints(settings),
        *use_api.endpoints(settings),
        *project_profile.endpoints(settings),
        *portability.endpoints(settings),
        *report_api.endpoints(settings),
        *timeline_api.endpoints(settings),
        *login_links.endpoints(settings),
    ]


def _client_key(request: Request) -> str:
    return request.client.host if request.client else "local"


# slowapi calls inspect.signature(key_func) on every request (~14 us); a precomputed
# __signature__ is what inspect returns first (~3 us).
_client_key.__signature__ = inspect.signature(_client_key)  # type: ignore[attr-defined]


def _rate_wrapper(settings: Settings, limiter: Limiter) -> Callable[[Endpoint, Any], Any]:
    limits = {
        "read": settings.rate_limits.read,
        "write": settings.rate_limits.write,
        "login": settings.rate_limits.login,
    }

    def wrap(ep: Endpoint, fn: Any) -> Any:
        return limiter.limit(limits[ep.rate_group])(fn)

    return wrap


# What each refusal of the store answers over HTTP (the spool's in-process replay answers the same).
STORE_ERRORS: dict[type[StoreError], type[CairnError]] = {
    InvalidValue: BadRequest,
    RowConflict: Conflict,
    StoreFull: InsufficientStorage,
    StoreLocked: ServiceUnavailable,
    StoreUnavailable: ServiceUnavailable,
    StoreCorrupt: ServiceUnavailable,
}


def http_error(exc: StoreError) -> CairnError:
    """The HTTP error a store error answers as: the same message, field and line."""
    return STORE_ERRORS[type(exc)](exc.message, field=exc.field, line=exc.line)


async def _cairn_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CairnError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def _store_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StoreError)
    if isinstance(exc, StoreUnavailable) and wants_whole_page(request):
        # A browser opening a page during an outage reads what is wrong and sees it retry.
        return outage_page(request, exc)
    return await _cairn_error(request, http_error(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404 and wants_html(request.headers, request.url.path):
        from worker.pages.render import render

        return render(
            request,
            "not_found.html",
            {"title": "Not found", "what": f"page {request.url.path}", "back": "/"},
            status=404,
        )
    codes = {404: "not_found", 405: "method_not_allowed"}
    message = {
        404: f"no route for {request.url.path}",
        405: f"{request.method} is not allowed here",
    }
    return JSONResponse(
        error_body(
            codes.get(exc.status_code, "http_error"),
            message.get(exc.status_code, str(exc.detail)),
        ),
        status_code=exc.status_code,
        headers=getattr(exc, "headers", None),
    )


async def _rate_limited(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RateLimitExceeded)
    # Seconds until the window that refused this request lets one through again.
    retry = 60
    current = getattr(request.state, "view_rate_limit", None)
    if current is not None:
        with contextlib.suppress(Exception):
            reset, _ = request.app.state.limiter.limiter.get_window_stats(current[0], *current[1])
            retry = max(1, math.ceil(reset - time.time()))
    headers = {"Retry-After": str(retry)}
    if request.url.path.startswith("/login") and "text/html" in request.headers.get("accept", ""):
        # A browser at the login form: the form again, saying when to try, not raw JSON.
        from worker.pages.login import login_form

        wait = f"{retry} seconds" if retry != 1 else "1 second"
        page = login_form(request, f"Too many login attempts: try again in {wait}.", 429)
        page.headers.update(headers)
        return page
    return JSONResponse(
        error_body("rate_limited", f"too many requests: limit {exc.detail}; retry later"),
        status_code=429,
        headers=headers,
    )


async def _client_gone(request: Request, exc: Exception) -> Response:
    # The client closed the connection (or the body timeout closed it) before its body was in:
    # nothing was read, so nothing is stored, and nobody is left to read this answer.
    log.info(
        "%s %s: the client left before sending its whole body", request.method, request.url.path
    )
    return JSONResponse(
        error_body("bad_request", "the connection closed before the request body was complete"),
        status_code=400,
    )


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse(
        error_body("internal_error", "internal error; details are in the worker log"),
        status_code=500,
    )


def catch_all_last(routes: list[BaseRoute]) -> list[BaseRoute]:
    """Routes ending in a `{name:path}` parameter (an id that may contain "/") go after the
    others, so `/api/sessions/a/b/summary` reaches the summary route of session `a/b` rather
    than the detail route of a session named `a/b/summary`. Otherwise the order is kept."""

    def ends_in_path_param(route: BaseRoute) -> bool:
        return str(getattr(route, "path", "")).endswith(":path}")

    return sorted(routes, key=ends_in_path_param)


def create_app(settings: Settings, *, port: int | None = None) -> Starlette:
    """The worker application. `port` is the port it is served on (for worker.json)."""
    limiter = Limiter(
        key_func=_client_key, key_style="endpoint", storage_uri=f"{ratelimit.SCHEME}://"
    )
    wrap = _rate_wrapper(settings, limiter)
    metrics = Metrics()  # one per app: its middleware counts into what the worker reports
    routes: list[BaseRoute] = [make_route(ep, wrap) for ep in all_endpoints(settings)]
    routes.extend(system.raw_routes())
    routes.extend(dashboard_routes(limiter.limit(settings.rate_limits.login)))
    routes = catch_all_last(routes)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        ensure_home(settings.home, *home_folders(settings.home))
        tokens = TokenKeeper(settings.token_path)
        tokens.ensure()
        logins = DashboardLogins(
            settings.logins_path,
            tokens,
            max_age_s=settings.dashboard.session_cookie_days * 86400,
            max_count=settings.dashboard.max_logins,
        )
        logins.load()
        team_url = database_url(settings.home)
        store = make_store(settings, team_url)
        store.open()
        events: Events = Broadcaster(
            buffer_size=settings.dashboard.sse_buffer,
            max_clients=settings.dashboard.sse_max_clients,
        )
        team_feed = None
        if team_url:
            # Teammates' shared events reach this worker's feed, and its own reach theirs.
            team_feed = TeamFeed(team_url, events)
            events = team_feed
        cairn = Cairn(
            metrics=metrics,
            settings=settings,
            store=store,
            tokens=tokens,
            events=events,
            started_at_ms=now_ms(),
            port=port or settings.server.port,
            logins=logins,
            author=settings.author or git_author(None),
        )
        if store.backend == "postgres":
            # The team database finds and counts the keywords itself: nothing to load.
            cairn.keywords = DatabaseKeywords()
        else:
            # The in-memory BM25 index loads in its own thread (a search before then waits).
            keyword_service = KeywordIndexService(store, KeywordIndex())
            cairn.keywords = keyword_service.index
            cairn.keyword_index = keyword_service
            keyword_service.start()
        # Background embedder: loads the model in its own thread, so /health answers at once.
        embedder_service = EmbeddingService(settings, store)
        cairn.embeddings = embedder_service
        cairn.item_listeners.append(embedder_service.enqueue)
        embedder_service.start()
        # Scheduled decay pass and observation caps (memory lifecycle).
        decay_service = DecayService(settings, store, events)
        cairn.decay = decay_service
        cairn.item_listeners.append(decay_service.on_items)
        decay_service.start()
        # The hooks' spool: replayed through this app at start and periodically.
        cairn.spool = SpoolReplayer(
            app,
            settings=settings,
            store=store,
            token=tokens.current,
            port=cairn.port,
            state={"cairn": cairn},
            direct=DirectDispatch(app.routes, cairn, {"cairn": cairn}, http_error),
        )
        cairn.spool.start()
        # A team database answering again after an outage: the spool replays now, not next round.
        loop, replayer = asyncio.get_running_loop(), cairn.spool

        def replay_now() -> None:
            loop.call_soon_threadsafe(replayer.wake)

        store.add_recovery_listener(replay_now)
        if team_feed is not None:
            cairn.team_feed = team_feed
            team_feed.start()
        if port is not None:
            write_runtime(settings, port)
        try:
            yield {"cairn": cairn}
        finally:
            events.close()
            for service in reversed(list(cairn.services.values())):
                stop = getattr(service, "stop", None)
                if stop is not None:
                    with contextlib.suppress(Exception):
                        await stop()
            store.close()
            if port is not None:
                remove_runtime(settings)

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            # Outermost: a request the security layer refuses (401, 413) is counted too.
            Middleware(MetricsMiddleware, metrics=metrics),
            Middleware(SecurityMiddleware, max_body_bytes=settings.limits.max_body_bytes),
        ],
        exception_handlers={
            CairnError: _cairn_error,
            StoreError: _store_error,
            HTTPException: _http_error,
            RateLimitExceeded: _rate_limited,
            ClientDisconnect: _client_gone,
            Exception: _unexpected,
        },
    )
    app.state.limiter = limiter
    app.state.settings = settings
    app.state.version = __version__
    return app
