"""Dashboard logins by one-time link: the container's link keeper and where a login may lead."""

from __future__ import annotations

from worker.auth import LoginLinks
from worker.container import Cairn


def links(cairn: Cairn) -> LoginLinks:
    """The one-time login links, made on the first request for one."""
    if cairn.login_links is None:
        cairn.login_links = LoginLinks(cairn.settings.dashboard.login_link_seconds)
    return cairn.login_links


def safe_next(target: str | None) -> str:
    """A local path to go to after login (never another site)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    if any(ch in target for ch in "\r\n"):
        return "/"
    return target
