"""Learning from use: judge what a session did with what it was given (worker/memory/use.py
decides an outcome, store/use.py keeps it; memory/usefulness.py weighs an item's record)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from worker.clock import now_ms, to_iso
from worker.container import Cairn
from worker.errors import BadRequest, NotFound
from worker.memory import usefulness
from worker.memory.use import EVIDENCE_CHARS, OUTCOMES, corrects, is_correction, judge
from worker.schema import Schema
from worker.settings import Settings
from worker.store import sessions, summaries
from worker.store import use as use_store
from worker.store.db import AnyDb
from worker.store.items import KINDS, Ref, load_items


def judge_turn(
    conn: AnyDb,
    session_id: str,
    observations: Sequence[Mapping[str, Any]] | None,
    answer: str | None,
    at: int,
) -> int:
    """At the end of a turn: each item the session was given and not judged yet, by what the
    session did after it (`observations`, oldest first, with `created_at` in ms; None: read
    them) and the agent's closing message. Items since deleted are not judged. Rows judged."""
    waiting = use_store.pending(conn, session_id)
    if not waiting:
        return 0
    if observations is None:
        activity = summaries.session_activity(conn, session_id, visible_to=None)
        observations = activity["observations"] if activity is not None else []
    items = load_items(conn, [ref for ref, _ in waiting])
    decided = []
    for ref, injected_at in waiting:
        item = items.get(ref)
        if item is None:
            continue
        after = [o for o in observations if int(o.get("created_at") or 0) >= injected_at]
        found = judge(item, after, answer)
        decided.append(use_store.Decided(ref[0], ref[1], found.outcome, found.evidence))
    return use_store.decide(conn, session_id, decided, at)


def judge_correction(conn: AnyDb, session_id: str, prompt: str, at: int) -> int:
    """A new prompt of the session that corrects an item the turn before it was given:
    contradicted (items of earlier turns are not the prompt's subject). Most prompts correct
    nothing: they cost no read."""
    if not is_correction(prompt):
        return 0
    given = use_store.session_outcomes(conn, session_id)
    open_ = {ref: row for ref, row in given.items() if row["outcome"] in ("used", "ignored")}
    if not open_:
        return 0
    last = max(int(row["decided_at"] or 0) for row in open_.values())
    judged = [ref for ref, row in open_.items() if int(row["decided_at"] or 0) == last]
    items = load_items(conn, judged)
    decided = []
    for ref in judged:
        item = items.get(ref)
        named = corrects(prompt, item) if item is not None else None
        if named:
            evidence = f"the next prompt corrected it ({named})"
            decided.append(use_store.Decided(ref[0], ref[1], "contradicted", evidence))
    return use_store.decide(conn, session_id, decided, at)


async def report(cairn: Cairn, kind: str, item_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """An outcome told by the client (an editor that knows what its agent did), for the item's
    injection in `session_id`, or its latest one: it replaces what the hooks judged. 404 when
    the item was never given (in that session)."""
    _check_kind(kind)
    ref: Ref = (kind, item_id)
    evidence = str(body.get("evidence") or "reported by the client").strip()[:EVIDENCE_CHARS]
    outcome = str(body["outcome"])
    given = body.get("session_id")

    def write(conn: AnyDb) -> str | None:
        session = str(given) if given else use_store.latest_session(conn, ref)
        if session is None:
            return None
        decided = [use_store.Decided(kind, item_id, outcome, evidence)]
        return session if use_store.decide(conn, session, decided, now_ms()) else None

    session = await cairn.store.write(write)
    if session is None:
        where = f" in session {given!r}" if given else ""
        raise NotFound(f"{kind} {item_id} was never given{where}")
    return {
        "session_id": session,
        "kind": kind,
        "id": item_id,
        "outcome": outcome,
        "evidence": evidence,
    }


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}", field="kind")


async def item_use(cairn: Cairn, kind: str, item_id: int) -> dict[str, Any]:
    """An item's record: shown (judged sessions), used, ignored, contradicted, the last evidence
    of use, and the log-odds it adds to the item's relevance now."""
    _check_kind(kind)

    def read(conn: AnyDb) -> dict[str, Any]:
        found = use_store.item_use(conn, kind, item_id)
        last = found["last_used"]
        if last is not None:
            last["at"] = to_iso(last["at"])
            author = sessions.authors(conn, [last["session_id"]]).get(last["session_id"])
            last["evidence"] = shown_evidence(last["evidence"], author, cairn.reader)
        ref: Ref = (kind, item_id)
        items = load_items(conn, [ref])
        if ref not in items:
            raise NotFound(f"{kind} {item_id} not found")
        # At no prompt in particular: every injection counts whole.
        now = now_ms()
        history = use_store.history(conn, [ref])
        found["shift"] = round(
            usefulness.shifts(history, items, cairn.settings, now).get(ref, 0.0), 4
        )
        return found

    return await cairn.store.read(read)


def shown_evidence(evidence: str | None, author: str | None, reader: str | None) -> str | None:
    """Evidence names files and commands of the session's observations, which on a team
    database are private to their author (store/privacy.py): another reader sees only that it
    was used."""
    if reader is None or author is None or author == reader:
        return evidence
    return "in a teammate's session"


def report_schema(s: Settings) -> Schema:
    return {
        "type": "object",
        "required": ["outcome"],
        "properties": {
            "outcome": {"type": "string", "enum": list(OUTCOMES)},
            "evidence": {"type": "string", "maxLength": EVIDENCE_CHARS},
            "session_id": {"type": "string", "minLength": 1, "maxLength": 200},
        },
    }
