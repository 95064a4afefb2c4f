"""Schema pieces shared by the API resources and the operations (built from Settings so limits
stay in one place)."""

from __future__ import annotations

from typing import Any

from worker.clock import parse_iso
from worker.errors import BadRequest
from worker.schema import Schema
from worker.settings import Settings
from worker.store.observations import TYPES as OBSERVATION_TYPES

EVENT_ID: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "description": "Client-generated id; a repeat is accepted and ignored (idempotent retries).",
}
SESSION_STATUSES = ("active", "ended")
PLAN_STATUSES = ("pending", "in_progress", "completed")

DATETIME: Schema = {"type": "string", "format": "date-time", "maxLength": 64}
SESSION_ID: Schema = {"type": "string", "minLength": 1, "maxLength": 200}
# What may follow a session id in /api/sessions/{id}/<name> (tests/test_session_ids.py checks
# this against the routes, and the hooks' copy in hooks/cairn_hook_io.py against this).
SESSION_SUBROUTES = ("checkpoint", "checkpoints", "end", "plan", "summarize", "summary")
# A session id a client creates must round-trip through those routes: slashes are fine
# ("team/alpha/42"), but not an id ending in "/summary" (that path is the summary of "x"), an
# empty, "." or ".." segment (URL libraries collapse those), "\\" (browsers read it as "/") or
# control characters. Claude Code's UUIDs always pass; the hooks map any other id onto this
# rule themselves (route_safe_id), so they never fail.
SESSION_ID_PATTERN = (
    rf"(?!.*/(?:{'|'.join(SESSION_SUBROUTES)})$)"
    r"(?!(?:.*/)?\.{0,2}(?:/|$))"
    r"[^\\\x00-\x1f\x7f]+"
)
NEW_SESSION_ID: Schema = {
    **SESSION_ID,
    "pattern": SESSION_ID_PATTERN,
    "x-patternMessage": "must round-trip through /api/sessions/{id}/...: no empty, '.' or '..' "
    "segment between slashes, no last segment named after a session route ("
    + ", ".join(SESSION_SUBROUTES)
    + "), no '\\' or control characters",
}

# Who a row is by (git user.email or an OS user name); absent: the worker's own (settings.author).
AUTHOR: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": 320,
    "pattern": r"^[^\x00-\x1f\x7f]+$",
    "x-patternMessage": "must have no control characters",
    "description": "who the row is by (git user.email, else the OS user); default: the worker's",
}


def project_field(s: Settings) -> Schema:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": 1024,
        "description": "Project key: a repository root path or any name; unknown keys are created.",
    }


def meta_field(s: Settings) -> Schema:
    return {
        "type": ["object", "null"],
        "x-maxBytes": s.limits.max_meta_bytes,
        "description": f"Free JSON object up to {s.limits.max_meta_bytes} bytes, returned verbatim.",
    }


def text_field(s: Settings, max_chars: int | None = None, *, min_length: int = 0) -> Schema:
    schema: Schema = {"type": "string", "maxLength": max_chars or s.limits.max_text_chars}
    if min_length:
        schema["minLength"] = min_length
    return schema


def page_query(s: Settings) -> dict[str, Schema]:
    return {
        "limit": {"type": "integer", "minimum": 1, "maximum": s.limits.max_page_size},
        "cursor": {"type": "string", "maxLength": 200},
    }


def time_ms(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    try:
        return parse_iso(value)
    except (ValueError, OverflowError, OSError):
        raise BadRequest(f"'{key}' must be an ISO 8601 date-time", field=key) from None


def int_cursor(raw: str | None, name: str = "cursor") -> int | None:
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise BadRequest(f"'{name}' is not a cursor this API returned", field=name)
    return int(raw)


def parse_ids(raw: str, limit: int, name: str = "ids") -> list[int]:
    """A comma-separated list of integer ids (e.g. `?ids=1,2,3`), at most `limit` of them."""
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    if not parts or not all(p.isascii() and p.isdigit() and len(p) < 19 for p in parts):
        raise BadRequest(f"'{name}' must be a comma-separated list of integer ids", field=name)
    if len(parts) > limit:
        raise BadRequest(f"'{name}' allows at most {limit} ids", field=name)
    return [int(p) for p in parts]


def observation_schema(s: Settings) -> Schema:
    """One observation as the API takes it (also the rule for imported observation rows)."""
    return {
        "type": "object",
        "required": ["project", "type", "title"],
        "properties": {
            "project": project_field(s),
            "session_id": NEW_SESSION_ID,
            "type": {"type": "string", "enum": list(OBSERVATION_TYPES)},
            "title": text_field(s, s.limits.max_title_chars, min_length=1),
            "body": text_field(s),
            "files": {
                "type": "array",
                "maxItems": s.limits.max_files,
                "items": {"type": "string", "minLength": 1, "maxLength": 4096},
            },
            "tool_name": {"type": "string", "maxLength": 200},
            "author": AUTHOR,
            "importance": {"type": "integer", "minimum": 1, "maximum": 5},
            "created_at": DATETIME,
            "event_id": EVENT_ID,
            "meta": meta_field(s),
        },
    }


def plan_schema(s: Settings) -> Schema:
    """A session plan as the API takes it (also the rule for imported plans)."""
    return {
        "type": "object",
        "required": ["plan"],
        "properties": {
            "plan": {
                "type": "array",
                "maxItems": s.sessions.plan_max_items,
                "items": {
                    "type": "object",
                    "required": ["content", "status"],
                    "properties": {
                        "content": text_field(s, 2000, min_length=1),
                        "status": {"type": "string", "enum": list(PLAN_STATUSES)},
                        "activeForm": {"type": "string", "maxLength": 2000},
                        "id": {"type": ["string", "integer"]},
                        "priority": {"type": "string", "maxLength": 32},
                    },
                },
            },
            "project": project_field(s),
            "updated_at": {
                **DATETIME,
                "description": "When the agent wrote this plan; an older plan than the stored "
                "one is ignored (late spool replays).",
            },
            "event_id": EVENT_ID,
        },
    }
