"""Memory relations: list a memory's links and update chain, add and remove a relation."""

from __future__ import annotations

from typing import Any

from worker.container import Cairn
from worker.errors import BadRequest, NotFound
from worker.memory.relations import RELATION_KINDS, chain
from worker.ops.memories import missing
from worker.schema import Schema
from worker.settings import Settings
from worker.store import memories as q
from worker.store import relations as rq
from worker.store.db import AnyDb


async def memory_relations(cairn: Cairn, mid: int) -> dict[str, Any]:
    """A memory's relations and its update chain (oldest first), with is_latest."""

    def read(conn: AnyDb) -> dict[str, Any]:
        row = q.get(conn, mid)
        if row is None:
            raise missing(mid)
        newer, older = rq.update_links(conn, mid)
        ids = chain(mid, newer, older)
        related = rq.for_memory(conn, mid)
        others = {r["from_id"] for r in related} | {r["to_id"] for r in related} | set(ids)
        by_id = {m["id"]: m for m in q.get_many(conn, sorted(others))}
        return {
            "id": mid,
            "is_latest": row["is_latest"],
            "superseded_by": row["superseded_by"],
            "supersedes": [
                r["to_id"] for r in related if r["kind"] == "updates" and r["from_id"] == mid
            ],
            "latest_id": ids[-1],
            "chain": [_brief(by_id[i]) for i in ids if i in by_id],
            "relations": [
                {
                    **r,
                    "direction": "outgoing" if r["from_id"] == mid else "incoming",
                    "other": _brief(by_id[r["to_id"] if r["from_id"] == mid else r["from_id"]]),
                }
                for r in related
            ],
        }

    return await cairn.store.read(read)


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "kind", "content", "importance", "created_at", "archived", "is_latest")
    return {k: row[k] for k in keys}


def relation_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "required": ["to_id", "kind"],
        "properties": {
            "to_id": {"type": "integer", "minimum": 1},
            "kind": {
                "type": "string",
                "enum": list(RELATION_KINDS),
                "description": "updates: this memory supersedes to_id; extends; derives",
            },
        },
    }


async def add_relation(cairn: Cairn, mid: int, body: dict[str, Any]) -> dict[str, Any]:
    """Relate a memory to another (a validated `relation_schema` body); `created` says if new."""
    to_id = body["to_id"]
    kind = body["kind"]
    if to_id == mid:
        raise BadRequest("a memory cannot relate to itself", field="to_id")

    def write(conn: AnyDb) -> tuple[dict[str, Any], bool]:
        if q.get_row(conn, mid) is None:
            raise missing(mid)
        if q.get_row(conn, to_id) is None:
            raise NotFound(f"memory {to_id} does not exist", field="to_id")
        return rq.add(conn, mid, to_id, kind, "manual")

    relation, created = await cairn.store.write(write)
    if kind == "updates":
        changed = await cairn.store.read(lambda c: q.get_many(c, [mid, to_id]))
        for row in changed:
            cairn.events.publish("memory.updated", row)
    return {**relation, "created": created}


async def delete_relation(cairn: Cairn, mid: int, rel_id: int) -> dict[str, Any]:
    """Remove a relation (removing an update makes the older memory current again)."""

    def write(conn: AnyDb) -> dict[str, Any]:
        rel = rq.get(conn, rel_id)
        if rel is None or mid not in (rel["from_id"], rel["to_id"]):
            raise NotFound(f"memory {mid} has no relation {rel_id}", field="rel_id")
        removed = rq.remove(conn, rel_id)
        assert removed is not None
        return removed

    removed = await cairn.store.write(write)
    if removed["kind"] == "updates":
        older = await cairn.store.read(lambda c: q.get(c, removed["to_id"]))
        if older is not None:
            cairn.events.publish("memory.updated", older)
    return {**removed, "deleted": True}
