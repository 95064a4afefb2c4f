"""Session summaries (Stop), checkpoints (PreCompact, Stop) and the session plan (TodoWrite)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from worker.api.endpoint import Call, Endpoint, with_status
from worker.clock import now_ms
from worker.errors import NotFound
from worker.memory.activity import compact_summary_message
from worker.memory.activity import unique as unique_texts
from worker.memory.checkpoint import build_checkpoint
from worker.memory.merge import save as save_memory
from worker.memory.profile import refresh_profile
from worker.memory.summary import SummaryLimits, build_summary
from worker.ops import use as use_ops
from worker.ops.fields import (
    DATETIME,
    EVENT_ID,
    NEW_SESSION_ID,
    plan_schema,
    text_field,
    time_ms,
)
from worker.schema import Schema, validate
from worker.settings import Settings
from worker.store import (
    checkpoints,
    memories,
    plans,
    profiles,
    projects,
    received,
    sessions,
    summaries,
)

TAG = "sessions"
log = logging.getLogger(__name__)


def _unknown(session_id: str) -> NotFound:
    return NotFound(
        f"session {session_id!r} does not exist (start it with POST /api/sessions first)",
        field="session_id",
    )


def _limits(s: Settings) -> SummaryLimits:
    return SummaryLimits(
        completed=s.sessions.summary_max_completed,
        files=s.sessions.summary_max_files,
        learned=s.sessions.summary_max_learned,
        next_steps=s.sessions.summary_max_next_steps,
        item_chars=s.sessions.summary_item_chars,
    )


def _checkpoint_from(
    conn: sqlite3.Connection,
    s: Settings,
    activity: dict[str, Any],
    *,
    trigger: str | None,
    last_assistant_message: str | None = None,
    custom_instructions: str | None = None,
    at: int | None = None,
) -> tuple[dict[str, Any], bool]:
    session = activity["session"]
    draft = build_checkpoint(
        activity["prompts"],
        activity["observations"],
        plan=session["plan"],
        last_assistant_message=last_assistant_message,
        custom_instructions=custom_instructions,
        root=session["project"],
        max_files=s.sessions.checkpoint_max_files,
        max_items=s.sessions.summary_max_completed,
        item_chars=s.sessions.summary_item_chars,
    )
    meta = {"custom_instructions": custom_instructions} if custom_instructions else None
    return checkpoints.insert(
        conn,
        session["id"],
        session["project_id"],
        trigger=trigger,
        task=draft.task,
        progress=draft.progress,
        next_steps=draft.next_steps,
        open_questions=draft.open_questions,
        files=draft.files,
        meta=meta,
        at=at,
    )


def summarize_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "properties": {
            "last_assistant_message": text_field(s),
            "event_id": EVENT_ID,
            "at": {
                **DATETIME,
                "description": "When the turn ended (an import gives the transcript's time; "
                "default now)",
            },
        },
    }


def _remember_facts(
    conn: sqlite3.Connection,
    s: Settings,
    session: dict[str, Any],
    facts: list[str],
    already: list[str],
    at: int | None = None,
) -> tuple[list[dict[str, Any]], list[int]]:
    """Learned items become `fact` memories of the project (write-time merge de-duplicates).

    Items the previous summary of this session already saved are skipped, so a repeated Stop
    neither duplicates a fact nor inflates its hit count. Returns (changed rows, created ids).
    """
    seen = {" ".join(f.lower().split()) for f in already}
    changed: list[dict[str, Any]] = []
    created: list[int] = []
    for fact in facts:
        if " ".join(fact.lower().split()) in seen:
            continue
        saved = save_memory(
            conn,
            {
                "kind": "fact",
                "content": fact,
                "project": session["project"],
                "session_id": session["id"],
                "meta": {"source": "session_summary", "session_id": session["id"]},
                # The agent's conclusion, by whoever ran the session (it was by nobody).
                "author": session.get("author"),
                # Imported history keeps its date (and does not supersede newer memories).
                "created_at_ms": at,
            },
            s,
        )
        changed.append(saved.row)
        changed += [m for m in memories.get_many(conn, saved.superseded)]
        if saved.created:
            created.append(int(saved.row["id"]))
    return changed, created


async def summarize(call: Call) -> Any:
    sid = call.path["session_id"]
    body = call.body or {}
    s = call.cairn.settings
    message = body.get("last_assistant_message")
    at = time_ms(body, "at")

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        seen = received.seen(conn, body.get("event_id"))
        if seen is not None:
            existing = summaries.get(conn, sid)
            if existing is not None:
                return {"summary": existing, "created": False}
        activity = summaries.session_activity(conn, sid, visible_to=call.cairn.reader)
        if activity is None:
            raise _unknown(sid)
        session = activity["session"]
        draft = build_summary(
            activity["prompts"],
            activity["observations"],
            plan=session["plan"],
            last_assistant_message=message,
            root=session["project"],
            limits=_limits(s),
        )
        previous = summaries.get(conn, sid)
        previous_facts = list(((previous or {}).get("meta") or {}).get("facts") or [])
        meta = {
            "prompt_count": len(activity["prompts"]),
            "observation_count": len(activity["observations"]),
            "facts": unique_texts(previous_facts + draft.facts),
            "has_assistant_message": bool(message),
        }
        summary, created = summaries.upsert(
            conn,
            sid,
            session["project_id"],
            request=draft.request,
            completed=draft.completed,
            files=draft.files,
            learned=draft.learned,
            next_steps=draft.next_steps,
            meta=meta,
            at=at,
        )
        checkpoint, checkpoint_new = _checkpoint_from(
            conn, s, activity, trigger="stop", last_assistant_message=message, at=at
        )
        changed, new_ids = _remember_facts(conn, s, session, draft.facts, previous_facts, at)
        # The turn is over: what it was given and what it did with it (learning from use).
        # (Every observation of the session, a teammate's private ones included: the judgment is
        # the worker's own; what it shows of the evidence is filtered where it is read.)
        seen_all = activity["observations"] if call.cairn.reader is None else None
        use_ops.judge_turn(conn, sid, seen_all, message, at or now_ms())
        received.record(conn, body.get("event_id"), "summary", sid)
        # Warm the profile cache now so the next SessionStart finds it fresh.
        try:
            refresh_profile(
                conn, int(session["project_id"]), s, reader=call.cairn.reader
            )  # cache only
        except Exception:
            log.exception("refreshing the profile of project %s failed", session["project"])
        return {
            "summary": summary,
            "created": created,
            "checkpoint": checkpoint if checkpoint_new else None,
            "memories": changed,
            "new_memory_ids": new_ids,
        }

    out = await call.cairn.store.write(write)
    summary = out["summary"]
    events = call.cairn.events
    events.publish("summary.created" if out["created"] else "summary.updated", summary)
    call.cairn.after_items("summary", [summary["id"]])
    if out.get("checkpoint") is not None:
        events.publish("checkpoint.created", out["checkpoint"])
    new_ids = set(out.get("new_memory_ids") or [])
    for row in out.get("memories") or []:
        events.publish("memory.created" if row["id"] in new_ids else "memory.updated", row)
    call.cairn.after_items("memory", sorted(new_ids))
    payload = {**summary, "created": out["created"], "facts_saved": sorted(new_ids)}
    return with_status(payload, 201 if out["created"] else 200)


def checkpoint_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "properties": {
            "trigger": {"type": "string", "maxLength": 64, "description": "manual | auto | stop"},
            "custom_instructions": text_field(s, 10_000),
            "last_assistant_message": text_field(s),
            "compact_summary": {
                **text_field(s, 10_000),
                "description": "Claude Code's summary of a compacted conversation (PostCompact): "
                "its pending tasks and next step become the checkpoint's next steps",
            },
            "event_id": EVENT_ID,
        },
    }


async def create_checkpoint(call: Call) -> Any:
    sid = call.path["session_id"]
    body = call.body or {}
    s = call.cairn.settings

    def write(conn: sqlite3.Connection) -> tuple[dict[str, Any], bool]:
        seen = received.seen(conn, body.get("event_id"))
        if seen is not None and seen.isdigit():
            existing = checkpoints.get(conn, int(seen))
            if existing is not None:
                return existing, False
        activity = summaries.session_activity(conn, sid, visible_to=call.cairn.reader)
        if activity is None:
            raise _unknown(sid)
        checkpoint, created = _checkpoint_from(
            conn,
            s,
            activity,
            trigger=body.get("trigger") or "manual",
            last_assistant_message=compact_summary_message(body.get("compact_summary"))
            or body.get("last_assistant_message"),
            custom_instructions=body.get("custom_instructions"),
        )
        received.record(conn, body.get("event_id"), "checkpoint", checkpoint["id"])
        return checkpoint, created

    checkpoint, created = await call.cairn.store.write(write)
    if created:
        call.cairn.events.publish("checkpoint.created", checkpoint)
    return with_status({**checkpoint, "created": created}, 201 if created else 200)


async def _session_item(
    call: Call, fetch: Callable[[sqlite3.Connection, str], dict[str, Any] | None], missing: str
) -> dict[str, Any]:
    """A session's summary/checkpoint; 404 naming whether the session or the item is missing."""
    sid = call.path["session_id"]

    def read(conn: sqlite3.Connection) -> dict[str, Any]:
        if sessions.get(conn, sid) is None:
            raise _unknown(sid)
        item = fetch(conn, sid)
        if item is None:
            raise NotFound(f"session {sid!r} has no {missing}", field="session_id")
        return item

    return await call.cairn.store.read(read)


async def get_summary(call: Call) -> Any:
    return await _session_item(
        call,
        summaries.get,
        "summary yet (written at Stop, or POST /api/sessions/{id}/summarize)",
    )


async def get_checkpoint(call: Call) -> Any:
    return await _session_item(
        call, checkpoints.latest, "checkpoint yet (written at PreCompact and Stop)"
    )


async def list_checkpoints(call: Call) -> Any:
    limit = call.query.get("limit", call.cairn.settings.limits.page_size)
    items = await _session_item(
        call, lambda c, sid: {"items": checkpoints.of_session(c, sid, limit)}, "checkpoints"
    )
    return items


async def put_plan(call: Call) -> Any:
    sid = call.path["session_id"]
    body = call.body
    keep = ("content", "status", "activeForm", "id", "priority")
    plan = [{k: item[k] for k in keep if k in item} for item in body["plan"]]
    at = time_ms(body, "updated_at")

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        if sessions.get(conn, sid) is None:
            if not body.get("project"):
                raise NotFound(
                    f"session {sid!r} does not exist: start it first or send 'project' to create it",
                    field="session_id",
                )
            validate(NEW_SESSION_ID, sid, "session_id")  # the plan creates it: same rule
            sessions.ensure(conn, sid, projects.ensure(conn, body["project"]))
        # A replayed event, or a plan older than the stored one (spool replays can arrive late),
        # must not overwrite a newer plan.
        applied = received.seen(conn, body.get("event_id")) is None and plans.is_newer(
            conn, sid, at
        )
        if applied:
            sessions.set_plan(conn, sid, plan)
            plans.stamp(conn, sid, at)
            row_pid = conn.execute(
                "SELECT project_id FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
            profiles.invalidate(conn, int(row_pid[0]))
            received.record(conn, body.get("event_id"), "plan", sid)
        row = sessions.get(conn, sid)
        assert row is not None
        return {**row, "applied": applied}

    return await call.cairn.store.write(write)


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "POST",
            "/api/sessions/{session_id:path}/summarize",
            summarize,
            "Write (or rewrite) the session summary from its prompts, observations and plan",
            TAG,
            body=summarize_schema(s),
            body_required=False,
            status=201,
            extra_statuses=(200, 404),
            description=(
                "Idempotent: one summary per session, rewritten on repeat. Also saves a `stop` "
                "checkpoint when the work moved since the latest one. Learned items become "
                "`fact` memories of the project."
            ),
        ),
        Endpoint(
            "GET",
            "/api/sessions/{session_id:path}/summary",
            get_summary,
            "The session summary",
            TAG,
            extra_statuses=(404,),
        ),
        Endpoint(
            "POST",
            "/api/sessions/{session_id:path}/checkpoint",
            create_checkpoint,
            "Save a checkpoint (task, progress, next steps, open questions, files in flight)",
            TAG,
            body=checkpoint_schema(s),
            body_required=False,
            status=201,
            extra_statuses=(200, 404),
        ),
        Endpoint(
            "GET",
            "/api/sessions/{session_id:path}/checkpoint",
            get_checkpoint,
            "The session's latest checkpoint",
            TAG,
            extra_statuses=(404,),
        ),
        Endpoint(
            "GET",
            "/api/sessions/{session_id:path}/checkpoints",
            list_checkpoints,
            "Every checkpoint of the session, newest first",
            TAG,
            query={"limit": {"type": "integer", "minimum": 1, "maximum": s.limits.max_page_size}},
            extra_statuses=(404,),
        ),
        Endpoint(
            "PUT",
            "/api/sessions/{session_id:path}/plan",
            put_plan,
            "Replace the session's current plan (TodoWrite items)",
            TAG,
            body=plan_schema(s),
            extra_statuses=(404,),
        ),
    ]
