"""Relations between memories: `updates` (supersedes), `extends`, `derives`; and the update chain.

Ported to the store's database edge (store/db.py): SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from typing import Any

from worker.clock import now_ms, to_iso
from worker.store.db import AnyDb, Row, as_db


def relation_dict(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "from_id": row["from_id"],
        "to_id": row["to_id"],
        "kind": row["kind"],
        "reason": row["reason"],
        "created_at": to_iso(row["created_at"]),
    }


def get(conn: AnyDb, relation_id: int) -> dict[str, Any] | None:
    row = (
        as_db(conn)
        .execute("SELECT * FROM memory_relations WHERE id = ?", (relation_id,))
        .fetchone()
    )
    return relation_dict(row) if row is not None else None


def add(
    conn: AnyDb, from_id: int, to_id: int, kind: str, reason: str = "manual"
) -> tuple[dict[str, Any], bool]:
    """Record `from_id --kind--> to_id`; `updates` also marks to_id superseded. (row, created)."""
    db = as_db(conn)
    existing = db.execute(
        "SELECT * FROM memory_relations WHERE from_id = ? AND to_id = ? AND kind = ?",
        (from_id, to_id, kind),
    ).fetchone()
    if existing is not None:
        created = False
        rel_id = int(existing["id"])
    else:
        rel_id = db.insert(
            "INSERT INTO memory_relations(from_id, to_id, kind, created_at, reason) "
            "VALUES (?, ?, ?, ?, ?)",
            (from_id, to_id, kind, now_ms(), reason),
        )
        created = True
    if kind == "updates":
        db.execute(
            "UPDATE memories SET superseded_by = ?, updated_at = ? WHERE id = ?",
            (from_id, now_ms(), to_id),
        )
        # A memory cannot be newer than what it superseded: undo a reverse link, if any.
        db.execute(
            "UPDATE memories SET superseded_by = NULL WHERE id = ? AND superseded_by = ?",
            (from_id, to_id),
        )
        db.execute(
            "DELETE FROM memory_relations WHERE from_id = ? AND to_id = ? AND kind = 'updates'",
            (to_id, from_id),
        )
    row = get(db, rel_id)
    assert row is not None
    return row, created


def remove(conn: AnyDb, relation_id: int) -> dict[str, Any] | None:
    """Delete a relation; removing an `updates` makes the older memory the latest again."""
    db = as_db(conn)
    row = get(db, relation_id)
    if row is None:
        return None
    db.execute("DELETE FROM memory_relations WHERE id = ?", (relation_id,))
    if row["kind"] == "updates":
        # Another `updates` relation may still supersede it; otherwise it is the latest again.
        other = db.execute(
            "SELECT from_id FROM memory_relations WHERE to_id = ? AND kind = 'updates' "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            (row["to_id"],),
        ).fetchone()
        db.execute(
            "UPDATE memories SET superseded_by = ?, updated_at = ? WHERE id = ?",
            (other[0] if other else None, now_ms(), row["to_id"]),
        )
    return row


def for_memory(conn: AnyDb, memory_id: int) -> list[dict[str, Any]]:
    rows = (
        as_db(conn)
        .execute(
            "SELECT * FROM memory_relations WHERE from_id = ? OR to_id = ? ORDER BY id",
            (memory_id, memory_id),
        )
        .fetchall()
    )
    return [relation_dict(r) for r in rows]


def update_links(
    conn: AnyDb, memory_id: int, depth: int = 100
) -> tuple[dict[int, int | None], dict[int, int]]:
    """(superseded_by, supersedes) maps over the `updates` graph reachable from a memory."""
    db = as_db(conn)
    newer: dict[int, int | None] = {}
    older: dict[int, int] = {}
    frontier = [memory_id]
    seen: set[int] = set()
    while frontier and len(seen) < depth:
        node = frontier.pop()
        if node in seen:
            continue
        seen.add(node)
        for row in db.execute(
            "SELECT from_id, to_id FROM memory_relations WHERE kind = 'updates' "
            "AND (from_id = ? OR to_id = ?) ORDER BY created_at, id",
            (node, node),
        ):
            frm, to = int(row[0]), int(row[1])
            newer[to] = frm
            older[frm] = to
            frontier.extend((frm, to))
    return newer, older
