"""Session detail: one session with everything recorded in it (the API and the session page)."""

from __future__ import annotations

import sqlite3
from typing import Any

from worker.clock import to_iso
from worker.container import Cairn
from worker.errors import NotFound
from worker.ops.use import shown_evidence
from worker.store import checkpoints, memories, observations, sessions, summaries, use
from worker.store.items import load_items


async def session_detail(cairn: Cairn, sid: str) -> dict[str, Any]:
    """A session with its prompts, observations and the memories saved in it (oldest first),
    summary, last checkpoint and what Cairn gave it."""

    def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
        row = sessions.get(conn, sid, visible_to=cairn.reader)
        if row is None:
            return None
        obs, _ = observations.list_page(
            conn,
            observations.ObservationQuery(
                session_id=sid, include_archived=True, limit=500, visible_to=cairn.reader
            ),
        )
        row["prompts"] = sessions.prompts_of(conn, sid, visible_to=cairn.reader)
        row["observations"] = list(reversed(obs))
        row["summary"] = summaries.as_written(conn, sid)
        row["checkpoint"] = checkpoints.latest_as_written(conn, sid)
        row["given"] = given_items(conn, sid, cairn.reader)
        saved, _ = memories.list_page(
            conn, memories.MemoryQuery(session_id=sid, include_archived=True, limit=100)
        )
        row["memories"] = list(reversed(saved))
        return row

    row = await cairn.store.read(read)
    if row is None:
        raise NotFound(f"session {sid!r} does not exist", field="session_id")
    return row


def given_items(
    conn: sqlite3.Connection, sid: str, reader: str | None = None
) -> list[dict[str, Any]]:
    """What Cairn's prompt context gave the session, oldest first, each with what became of it
    (`outcome` None until its turn ended; learning from use)."""
    given = use.session_outcomes(conn, sid)
    found = load_items(conn, list(given))
    author = sessions.authors(conn, [sid]).get(sid)
    out = []
    for ref, row in sorted(given.items(), key=lambda entry: (entry[1]["injected_at"], entry[0])):
        item = found.get(ref)
        if item is None:
            continue  # forgotten since
        title = item.get("title") or item.get("body") or ""
        when = {k: to_iso(row[k]) for k in ("injected_at", "decided_at")}
        evidence = shown_evidence(row["evidence"], author, reader)
        out.append(
            {
                "kind": ref[0],
                "id": ref[1],
                "title": str(title)[:200],
                **row,
                **when,
                "evidence": evidence,
            }
        )
    return out
