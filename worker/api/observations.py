"""Observations: create (one or a batch), list with filters and cursor, get one or many."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint, with_status
from worker.errors import BadRequest, NotFound
from worker.ops.fields import (
    DATETIME,
    SESSION_ID,
    int_cursor,
    observation_schema,
    page_query,
    parse_ids,
    project_field,
    time_ms,
)
from worker.schema import Schema, check_required, validate
from worker.settings import Settings
from worker.store import observations as q

TAG = "observations"


def create_schema(s: Settings) -> Schema:
    single = observation_schema(s)
    return {
        "type": "object",
        "description": "One observation, or {'observations': [...]} for a batch.",
        "properties": {
            **single["properties"],
            "observations": {"type": "array", "minItems": 1, "maxItems": s.limits.max_batch},
        },
    }


def _prepare(item: dict[str, Any], author: str) -> dict[str, Any]:
    out = dict(item)
    out["created_at_ms"] = time_ms(item, "created_at")
    # Absent: the session's author (insert_many looks it up), else the project's (author_for).
    out["default_author"] = author
    return out


async def create_observations(call: Call) -> Any:
    s = call.cairn.settings
    body: dict[str, Any] = call.body
    schema = observation_schema(s)
    if "observations" in body:
        items = []
        for i, raw in enumerate(body["observations"]):
            if not isinstance(raw, dict):
                raise BadRequest(f"'observations[{i}]' must be object", field=f"observations[{i}]")
            item = validate(schema, raw, f"observations[{i}]")
            items.append(_prepare(item, call.cairn.author_for(item.get("project"))))
    else:
        # The body passed create_schema, which holds every item property with the same rules:
        # only the item's required fields are left to check.
        check_required(schema, body)
        items = [_prepare(body, call.cairn.author_for(body.get("project")))]

    if s.team.share_observations:  # on a team database, seen by teammates too
        items = [{**item, "shared": True} for item in items]
    # Concurrent posts that reach the writer together are inserted by one insert_many call.
    results = await call.cairn.store.write_items(q.insert_many, items)
    created = [row for row, is_new in results if is_new]
    for row in created:
        call.cairn.events.publish("observation.created", row)
    call.cairn.after_observations([row["id"] for row in created])
    if "observations" in body:
        return with_status(
            {
                "items": [row for row, _ in results],
                "created": len(created),
                "duplicates": len(results) - len(created),
            },
            201 if created else 200,
        )
    row, is_new = results[0]
    return with_status({**row, "duplicate": not is_new}, 201 if is_new else 200)


def list_query(s: Settings) -> dict[str, Schema]:
    return {
        "project": project_field(s),
        "session_id": SESSION_ID,
        "type": {"type": "string", "enum": list(q.TYPES)},
        "since": DATETIME,
        "until": DATETIME,
        "ids": {"type": "string", "maxLength": 10000, "description": "Comma-separated ids"},
        "include_archived": {"type": "boolean"},
        **page_query(s),
    }


async def list_observations(call: Call) -> Any:
    s = call.cairn.settings
    qp = call.query
    if "ids" in qp:
        ids = parse_ids(qp["ids"], s.limits.max_page_size)
        items = await call.cairn.store.read(lambda c: q.get_many(c, ids))
        return {"items": [i for i in items if call.cairn.visible(i)], "next_cursor": None}
    limit = qp.get("limit", s.limits.page_size)
    query = q.ObservationQuery(
        project=qp.get("project"),
        session_id=qp.get("session_id"),
        type_=qp.get("type"),
        since=time_ms(qp, "since"),
        until=time_ms(qp, "until"),
        before_id=int_cursor(qp.get("cursor")),
        include_archived=qp.get("include_archived", False),
        limit=limit,
        visible_to=call.cairn.reader,
    )
    items, cursor = await call.cairn.store.read(lambda c: q.list_page(c, query))
    return {"items": items, "next_cursor": str(cursor) if cursor is not None else None}


async def get_observation(call: Call) -> Any:
    oid = call.path["id"]
    row = await call.cairn.store.read(lambda c: q.get(c, oid))
    # A teammate's private observation is answered as missing (its existence is not shown).
    if row is None or not call.cairn.visible(row):
        raise NotFound(f"observation {oid} does not exist", field="id")
    return row


def endpoints(s: Settings) -> list[Endpoint]:
    obs_ref: Schema = {"$ref": "#/components/schemas/Observation"}
    return [
        Endpoint(
            "POST",
            "/api/observations",
            create_observations,
            "Create one observation or a batch (idempotent by event_id)",
            TAG,
            body=create_schema(s),
            status=201,
            extra_statuses=(200,),
        ),
        Endpoint(
            "GET",
            "/api/observations",
            list_observations,
            "List observations (filters, newest first, cursor) or fetch many by ids",
            TAG,
            query=list_query(s),
            response={
                "type": "object",
                "properties": {"items": {"type": "array", "items": obs_ref}},
            },
        ),
        Endpoint(
            "GET",
            "/api/observations/{id:int}",
            get_observation,
            "Get one observation",
            TAG,
            response=obs_ref,
        ),
    ]
