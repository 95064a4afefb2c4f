"""The Jinja2 environment (autoescape always on), filters, and the page/fragment responses."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import bleach
import jinja2
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from worker import __version__
from worker.agents import NAMES
from worker.pages.config_groups import config_groups
from worker.paths import data_dir

NAV = (
    ("feed", "/", "Feed"),
    ("search", "/search", "Search"),
    ("sessions", "/sessions", "Sessions"),
    ("memories", "/memories", "Memories"),
    ("context", "/context", "Context"),
    ("stats", "/stats", "Stats"),
    ("settings", "/settings", "Settings"),
)

# Rich text (markdown-ish snippets from the search engine) may only keep these tags.
ALLOWED_TAGS = frozenset({"mark", "b", "strong", "em", "code"})


def parse_time(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    try:
        text = str(value).replace("Z", "+00:00")
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


_EXIT = re.compile(r"\(exit (-?\d+)\)\s*$")


def failed_exit(item: Any) -> int | None:
    """A failed command's exit code, from its title's `(exit N)` (None: not a failed command)."""
    if not isinstance(item, dict) or item.get("type") != "command":
        return None
    found = _EXIT.search(str(item.get("title") or ""))
    code = int(found.group(1)) if found else 0
    return code or None


def when(value: Any) -> str:
    """'2026-12-02 16:40 UTC' for a timestamp (ISO text or epoch ms)."""
    parsed = parse_time(value)
    return parsed.strftime("%Y-%m-%d %H:%M UTC") if parsed else ""


def ago(value: Any) -> str:
    parsed = parse_time(value)
    if parsed is None:
        return ""
    seconds = int((datetime.now(tz=UTC) - parsed).total_seconds())
    if seconds < 0:
        return "in the future"
    for size, unit in ((86400 * 365, "y"), (86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


def duration(seconds: Any) -> str:
    if seconds is None:
        return "running"
    total = int(float(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def epoch_ms(value: Any) -> int:
    parsed = parse_time(value)
    return int(parsed.timestamp() * 1000) if parsed else 0


def size(num: Any) -> str:
    value = float(num or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def highlight(text: Any, query: str | None) -> Markup:
    """Escape `text` and wrap each query word (case-insensitive, prefix) in <mark>."""
    raw = "" if text is None else str(text)
    words = sorted({w for w in re.findall(r"\w{2,}", query or "")}, key=len, reverse=True)
    if not words:
        return Markup(escape(raw))
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + ")", re.IGNORECASE)
    out: list[str] = []
    last = 0
    for match in pattern.finditer(raw):
        out.append(str(escape(raw[last : match.start()])))
        out.append(f"<mark>{escape(match.group(0))}</mark>")
        last = match.end()
    out.append(str(escape(raw[last:])))
    return Markup("".join(out))


def rich(text: Any) -> Markup:
    """Text from another module that may carry <mark>/<b> emphasis: everything else is escaped."""
    cleaned = bleach.clean(
        "" if text is None else str(text), tags=ALLOWED_TAGS, attributes={}, strip=False
    )
    return Markup(cleaned)


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(text: Any) -> Markup:
    """A message with `backticked` commands, as HTML: escaped, each span in <code>."""
    escaped = str(escape("" if text is None else str(text)))
    return Markup(_CODE_SPAN.sub(r"<code>\1</code>", escaped))


def agent_name(agent: object) -> str:
    """An agent's name for a person ('' for none; an unknown id as it is)."""
    return NAMES.get(str(agent), str(agent)) if agent else ""


def shorten(text: Any, limit: int = 160) -> str:
    value = " ".join(str(text or "").split())
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("dashboard") / "templates")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=when,
        ago=ago,
        ms=epoch_ms,
        duration=duration,
        size=size,
        highlight=highlight,
        rich=rich,
    )
    env.filters["shorten"] = shorten
    env.filters["agent_name"] = agent_name
    env.filters["failed_exit"] = failed_exit
    env.filters["code_spans"] = code_spans
    env.filters["config_groups"] = config_groups
    env.globals.update(nav=NAV, version=__version__)
    return env


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def csrf_token(request: Request) -> str:
    """The CSRF value for htmx requests; empty when the visitor is not logged in."""
    cairn = getattr(request.state, "cairn", None)
    if cairn is None or request.scope.get("state", {}).get("auth_via") is None:
        return ""
    return str(cairn.tokens.derived("csrf"))


def _corrupt_databases(request: Request) -> list[str]:
    cairn = getattr(request.state, "cairn", None)
    if cairn is None or request.scope.get("state", {}).get("auth_via") is None:
        return []
    return [str(p) for p in cairn.store.corrupt_copies()]


def render(
    request: Request,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """Render a whole page, or a fragment template for htmx requests."""
    ctx: dict[str, Any] = {
        "request": request,
        "csrf": csrf_token(request),
        "path": request.url.path,
        "active": "",
        "title": "",
        # A damaged database moved aside at start is shown on every page until it is removed.
        "corrupt_databases": _corrupt_databases(request),
    }
    ctx.update(context or {})
    html = environment().get_template(template).render(ctx)
    return HTMLResponse(
        html,
        status_code=status,
        headers={
            "Cache-Control": "no-store",
            # With `no-referrer` a browser sends `Origin: null` on plain form posts (the login
            # form), which the Origin check must refuse; `same-origin` still sends nothing
            # to other sites.
            "Referrer-Policy": "same-origin",
            **(headers or {}),
        },
    )
