"""Sessions (start, end, list, detail) and prompts (create, numbered within the session)."""

from __future__ import annotations

from typing import Any

from worker.agents import AGENTS
from worker.api.endpoint import Call, Endpoint, with_status
from worker.clock import now_ms
from worker.errors import BadRequest, NotFound
from worker.ops import use as use_ops
from worker.ops.fields import (
    AUTHOR,
    DATETIME,
    EVENT_ID,
    NEW_SESSION_ID,
    SESSION_ID,
    SESSION_STATUSES,
    meta_field,
    project_field,
    text_field,
    time_ms,
)
from worker.ops.sessions import session_detail
from worker.settings import Settings
from worker.store import projects, received, sessions

TAG = "sessions"


def start_schema(s: Settings) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["session_id", "project"],
        "properties": {
            "session_id": NEW_SESSION_ID,
            "project": project_field(s),
            "cwd": {"type": "string", "maxLength": 4096},
            "source": {"type": "string", "maxLength": 64},
            "author": AUTHOR,
            "parent_id": SESSION_ID,
            "started_at": DATETIME,
            "event_id": EVENT_ID,
            "meta": meta_field(s),
        },
    }


async def start_session(call: Call) -> Any:
    b = call.body
    started = time_ms(b, "started_at")

    def write(conn: Any) -> tuple[dict[str, Any], bool]:
        pid = projects.ensure(conn, b["project"])
        created = sessions.ensure(
            conn,
            b["session_id"],
            pid,
            cwd=b.get("cwd"),
            source=b.get("source"),
            parent_id=b.get("parent_id"),
            started_at=started,
            meta=b.get("meta"),
            author=b.get("author") or call.cairn.author_for(b["project"]),
        )
        received.record(conn, b.get("event_id"), "session", b["session_id"])
        row = sessions.get(conn, b["session_id"])
        assert row is not None
        return row, created

    row, created = await call.cairn.store.write(write)
    if created:
        call.cairn.events.publish("session.started", row)
    return with_status({**row, "created": created}, 201 if created else 200)


def end_schema(s: Settings) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "string", "maxLength": 200},
            "ended_at": DATETIME,
            "event_id": EVENT_ID,
        },
    }


async def end_session(call: Call) -> Any:
    sid = call.path["session_id"]
    b = call.body or {}
    at = time_ms(b, "ended_at")

    def write(conn: Any) -> dict[str, Any] | None:
        if not sessions.end(conn, sid, b.get("reason"), at):
            return None
        return sessions.get(conn, sid)

    row = await call.cairn.store.write(write)
    if row is None:
        raise NotFound(f"session {sid!r} does not exist", field="session_id")
    call.cairn.events.publish("session.ended", row)
    return row


async def list_sessions(call: Call) -> Any:
    s = call.cairn.settings
    qp = call.query
    items, cursor = await call.cairn.store.read(
        lambda c: sessions.list_page(
            c,
            project=qp.get("project"),
            status=qp.get("status"),
            before=qp.get("cursor"),
            limit=qp.get("limit", s.limits.page_size),
            visible_to=call.cairn.reader,
            agent=qp.get("agent"),
        )
    )
    return {"items": items, "next_cursor": cursor}


async def get_session(call: Call) -> Any:
    return await session_detail(call.cairn, call.path["session_id"])


def prompt_schema(s: Settings) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["session_id", "text"],
        "properties": {
            "session_id": NEW_SESSION_ID,
            "project": project_field(s),
            "text": text_field(s, min_length=1),
            "author": AUTHOR,
            "created_at": DATETIME,
            "event_id": EVENT_ID,
            "meta": meta_field(s),
            "context": {
                "type": "object",
                "description": (
                    "Ask for the prompt's context in the same call (one round trip for a hook): "
                    "the answer then holds `context`, as GET /api/context would give it for the "
                    "session's project with `query` (default: the prompt's text) and `budget`"
                ),
                "properties": {
                    "query": {"type": "string", "maxLength": s.search.max_query_chars},
                    "budget": {"type": "integer", "minimum": 0, "maximum": 20_000},
                },
            },
        },
    }


async def create_prompt(call: Call) -> Any:
    b = call.body
    created_at = time_ms(b, "created_at")

    def write(conn: Any) -> tuple[dict[str, Any], bool]:
        seen = received.seen(conn, b.get("event_id"))
        if seen is not None:
            existing = sessions.get_prompt(conn, int(seen))
            if existing is not None:
                return existing, False
        session = sessions.get(conn, b["session_id"])
        if session is None:
            if not b.get("project"):
                raise BadRequest(
                    f"session {b['session_id']!r} is unknown: send 'project' to create it",
                    field="project",
                )
            author = b.get("author") or call.cairn.author_for(b["project"])
            pid = projects.ensure(conn, b["project"])
            sessions.ensure(conn, b["session_id"], pid, author=author)
        else:
            # Absent: by the session's author (the hooks name it once, at SessionStart).
            author = (
                b.get("author") or session["author"] or call.cairn.author_for(session["project"])
            )
            pid = projects.ensure(conn, session["project"])
        prompt = sessions.add_prompt(
            conn,
            b["session_id"],
            pid,
            b["text"],
            created_at,
            b.get("meta"),
            author,
            shared=call.cairn.settings.team.share_prompts,
        )
        received.record(conn, b.get("event_id"), "prompt", prompt["id"])
        # What the session's earlier turns were given: judged now if no Stop did (an older
        # client, an interrupted turn), and corrected if this prompt says so.
        at = created_at or now_ms()
        use_ops.judge_turn(conn, b["session_id"], None, None, at)
        use_ops.judge_correction(conn, b["session_id"], b["text"], at)
        return prompt, True

    prompt, created = await call.cairn.store.write(write)
    if created:
        call.cairn.events.publish("prompt.created", prompt)
        call.cairn.after_items("prompt", [prompt["id"]])
    answer = {**prompt, "duplicate": not created}
    wanted = b.get("context")
    if isinstance(wanted, dict):
        answer["context"] = await _prompt_context(call, wanted, prompt["project"])
    return with_status(answer, 201 if created else 200)


async def _prompt_context(call: Call, wanted: dict[str, Any], project: str) -> Any:
    """What GET /api/context answers for this prompt: its project (the session's, as stored
    with the prompt), its text."""
    from worker.ops.context import context_answer

    b = call.body
    query = wanted.get("query") or b["text"][: call.cairn.settings.search.max_query_chars]
    params = {
        "project": project,
        "query": query,
        "session_id": b["session_id"],
        "budget": wanted.get("budget"),
    }
    return await context_answer(call.cairn, params, preview=False)


def endpoints(s: Settings) -> list[Endpoint]:
    from worker.ops.fields import page_query

    return [
        Endpoint(
            "POST",
            "/api/sessions",
            start_session,
            "Start (or resume) a session; idempotent by session_id",
            TAG,
            body=start_schema(s),
            status=201,
            extra_statuses=(200,),
        ),
        Endpoint(
            "POST",
            "/api/sessions/{session_id:path}/end",
            end_session,
            "Mark a session ended",
            TAG,
            body=end_schema(s),
            body_required=False,
            extra_statuses=(404,),
        ),
        Endpoint(
            "GET",
            "/api/sessions",
            list_sessions,
            "List sessions, newest first",
            TAG,
            query={
                "project": project_field(s),
                "status": {"type": "string", "enum": list(SESSION_STATUSES)},
                "agent": {"type": "string", "enum": list(AGENTS)},
                **page_query(s),
            },
        ),
        Endpoint(
            "GET",
            "/api/sessions/{session_id:path}",
            get_session,
            "Session detail with prompts, observations, summary and checkpoint",
            TAG,
            extra_statuses=(404,),
        ),
        Endpoint(
            "POST",
            "/api/prompts",
            create_prompt,
            "Store a prompt (numbered within its session)",
            "prompts",
            body=prompt_schema(s),
            status=201,
            extra_statuses=(200,),
        ),
    ]
