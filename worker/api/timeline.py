"""GET /api/timeline: one project's activity (observations, prompts, summaries, memories) in time
order around an item or a moment: what came just before and just after."""

from __future__ import annotations

from typing import Any

from worker.agents import AGENTS
from worker.api.endpoint import Call, Endpoint
from worker.clock import to_iso
from worker.errors import BadRequest, NotFound
from worker.ops.fields import DATETIME, project_field, time_ms
from worker.settings import Settings
from worker.store import feed
from worker.store.rows import ms

TAG = "timeline"
MAX_SPAN = 100
TITLE_CHARS = 300


def _entry(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": item["kind"],
        "id": item["id"],
        "type": item["type"],
        "title": str(item["title"] or "")[:TITLE_CHARS],
        "created_at": to_iso(ms(item["at"], f"{item['kind']} time")),
        "project": item["project"],
        "session_id": item["session_id"],
        "agent": item["agent"],
        "files": item["files"],
        "importance": item["importance"],
        "archived": item["archived_at"] is not None,
    }


async def timeline(call: Call) -> Any:
    qp = call.query
    before, after = qp.get("before", 10), qp.get("after", 10)
    kind = qp.get("anchor_kind", "observation")
    anchor_id = qp.get("anchor_id")
    at = time_ms(qp, "at")
    if anchor_id is not None and at is not None:
        raise BadRequest("give 'anchor_id' or 'at', not both", field="at")
    project = qp.get("project")
    type_ = qp.get("type")
    agent = qp.get("agent")
    archived = qp.get("include_archived", False)
    reader = call.cairn.reader

    def read(conn: Any) -> dict[str, Any]:
        anchor = None
        scope = project
        if anchor_id is not None:
            anchor = feed.item(conn, kind, anchor_id, visible_to=reader)
            if anchor is None:
                raise NotFound(f"{kind} {anchor_id} does not exist", field="anchor_id")
            scope = project or anchor["project"]
            edge: tuple[int, str, int] | None = (int(anchor["at"]), kind, int(anchor_id))
        elif at is not None:
            edge = (at, "~", 0)  # '~' sorts after every kind: items at that instant count as older
        else:
            edge = None
        # The teammates' private prompts and observations are never on it (store/privacy.py).
        line: dict[str, Any] = {"visible_to": reader, "project": scope, "type_": type_}
        line["agent"] = agent
        line["include_archived"] = archived
        older, _ = feed.stream(conn, before=edge, limit=before, **line)
        newer: list[dict[str, Any]] = []
        if edge is not None and after:
            newer, _ = feed.stream(conn, after=edge, limit=after, **line)
        return {
            "project": scope,
            "anchor": _entry(anchor) if anchor is not None else None,
            "before": [_entry(i) for i in reversed(older)],
            "after": [_entry(i) for i in newer],
        }

    return await call.cairn.store.read(read)


def endpoints(s: Settings) -> list[Endpoint]:
    span = {"type": "integer", "minimum": 0, "maximum": MAX_SPAN}
    return [
        Endpoint(
            "GET",
            "/api/timeline",
            timeline,
            "Activity around an item or a moment (oldest first): before, anchor, after",
            TAG,
            query={
                "project": project_field(s),
                "anchor_kind": {"type": "string", "enum": list(feed.KINDS)},
                "anchor_id": {"type": "integer", "minimum": 1},
                "at": DATETIME,
                "before": span,
                "after": span,
                "type": {"type": "string", "enum": list(feed.FILTERS)},
                "agent": {"type": "string", "enum": list(AGENTS)},
                "include_archived": {"type": "boolean"},
            },
            extra_statuses=(404,),
            description="Without anchor_id or at: the latest `before` items. Items of every kind "
            "(observation, prompt, summary, memory) share one time line; `type` narrows it, "
            "and `agent` to the items of that coding agent's sessions (each item names its "
            "`agent`, null when none).",
        ),
    ]
