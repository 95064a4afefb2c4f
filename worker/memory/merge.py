"""Saving a memory: score it, tag it, merge a repeat into the existing one, detect supersession.

`save(conn, item, settings)` is the one entry point every writer uses (the memories API, session
summaries turning learned items into facts, imports), inside the caller's write transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from worker.clock import now_ms
from worker.memory import importance as importance_mod
from worker.memory.statement import features, search_terms
from worker.memory.supersession import judge, may_update_by_meaning
from worker.memory.tags import normalise_tags, pick_tags
from worker.settings import Settings
from worker.store import memories, received, sessions
from worker.store import relations as relations_store
from worker.store.db import AnyDb, Row
from worker.store.memories import KIND_RANK
from worker.store.rows import dump_json, load_json, normalised_hash

# Kinds whose saves are checked for supersession (a note is free-form, never a value to replace).
SUPERSEDING_KINDS = ("decision", "fact", "preference", "lesson")
MAX_SUPERSEDED_PER_SAVE = 3
GLOBAL_PREFERENCE_IMPORTANCE = 4


@dataclass
class Saved:
    row: dict[str, Any]
    created: bool  # a new memory was stored
    merged: bool = False  # the same content existed: it counted a hit instead
    retagged: bool = False  # a merge added tags (the indexed text changed)
    superseded: list[int] = field(default_factory=list)  # older memories this one replaced
    superseded_by: int | None = None  # an import older than a memory already stored


def merge_fields(
    existing: Mapping[str, Any] | Row,
    incoming: Mapping[str, Any],
    *,
    now: int,
    max_tags: int,
) -> dict[str, Any]:
    """Column changes when `incoming` repeats `existing` (pure; both are memories rows/items)."""
    kind = existing["kind"]
    if KIND_RANK.get(incoming["kind"], 0) > KIND_RANK.get(kind, 0):
        kind = incoming["kind"]
    old_importance = int(existing["importance"])
    new_importance = int(incoming["importance"])
    importance = max(old_importance, new_importance)
    importance_auto = (
        existing["importance_auto"]
        if importance == old_importance
        else incoming.get("importance_auto")
    )
    old_tags = (
        load_json(existing["tags"], [], field="memories.tags")
        if isinstance(existing["tags"], str)
        else []
    )
    tags = normalise_tags([*old_tags, *incoming.get("tags", [])], max_tags)
    old_expiry, new_expiry = existing["expires_at"], incoming.get("expires_at_ms")
    expires = None if old_expiry is None or new_expiry is None else max(old_expiry, new_expiry)
    seen_at = max(int(existing["updated_at"]), int(incoming.get("created_at_ms") or now))
    changes: dict[str, Any] = {
        "kind": kind,
        "importance": importance,
        "importance_auto": 1 if importance_auto else 0,
        "pinned": 1 if existing["pinned"] or incoming.get("pinned") else 0,
        "expires_at": expires,
        "hit_count": int(existing["hit_count"]) + 1,
        "updated_at": seen_at,
        "archived_at": None,
        "archive_reason": None,
    }
    if incoming.get("created_at_ms") is None and dict(existing).get("dated"):
        changes["dated"] = 0  # stated live again: no longer only history
    # Only when they change: an update of the tags column drops the stored vector.
    if tags != old_tags:
        changes["tags"] = dump_json(tags)
    if existing["meta"] is None and incoming.get("meta") is not None:
        changes["meta"] = dump_json(incoming["meta"])
    return changes


def prepare(item: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """Fill importance and tags when not given (scored from the text)."""
    out = dict(item)
    if out.get("importance") is None:
        scored = importance_mod.score(out["content"], out["kind"])
        is_global = out.get("scope") == "global" or not out.get("project")
        if is_global and out["kind"] == "preference":
            # A global preference is a standing instruction for every project: it must reach
            # session-start context, which takes important memories only.
            scored = max(scored, GLOBAL_PREFERENCE_IMPORTANCE)
        out["importance"] = scored
        out["importance_auto"] = True
    given = out.get("tags")
    if given:
        out["tags"] = normalise_tags(given, settings.limits.max_tags)
    else:
        out["tags"] = pick_tags(out["content"], settings.memories.auto_tags)
        out["tags_auto"] = True
    return out


def save(
    conn: AnyDb,
    item: Mapping[str, Any],
    settings: Settings,
    similar: Mapping[int, float] | None = None,
    reader: str | None = None,
) -> Saved:
    """Store a memory item (validated fields; times as `*_ms`). Runs inside a write transaction.

    Item keys: kind, content, project (key) or scope="global", and optionally importance, tags,
    pinned, expires_at_ms, created_at_ms, meta, session_id, event_id, supersede (default: on,
    off for imports that carry created_at_ms). `similar` maps memory ids to their cosine with
    this text, when the caller could embed it: close ones are supersession candidates even when
    they share few words. A memory saved now with no session is the session's at work in its
    project, `reader`'s on a team database (None: any, as on one user's file).
    """
    seen = received.seen(conn, item.get("event_id"))
    if seen is not None:
        row = memories.get(conn, int(seen))
        if row is not None:
            return Saved(row, created=False)
    full = prepare(item, settings)
    project_id = memories.resolve_scope(conn, full)
    same = memories.find_same(conn, project_id, normalised_hash(full["content"]))
    now = now_ms()
    if project_id is not None and not full.get("session_id") and full.get("created_at_ms") is None:
        # Saved while an agent works here (its MCP tool, the dashboard, a script): the work it
        # came out of is that session's, which the prompt context reads as its thread.
        idle_ms = settings.dashboard.session_idle_minutes * 60_000
        full["session_id"] = sessions.working_session(conn, project_id, now, idle_ms, reader)
    if same is not None:
        changes = merge_fields(same, full, now=now, max_tags=settings.limits.max_tags)
        was_superseded = same["superseded_by"] is not None
        memories.update(conn, int(same["id"]), changes)
        memory_id = int(same["id"])
        result = Saved({}, created=False, merged=True, retagged="tags" in changes)
        if was_superseded and full.get("created_at_ms") is None:
            # Re-stating an old value makes it current again; an import (it carries its own
            # time) only repeats history and never revives what a newer memory replaced.
            memories.update(conn, memory_id, {"superseded_by": None})
            _detect_supersession(conn, memory_id, project_id, full, settings, result, similar)
    else:
        memory_id = memories.insert_row(conn, project_id, full)
        result = Saved({}, created=True)
        _detect_supersession(conn, memory_id, project_id, full, settings, result, similar)
    received.record(conn, item.get("event_id"), "memory", memory_id)
    row = memories.get(conn, memory_id)
    assert row is not None
    result.row = row
    return result


def wants_supersession(item: Mapping[str, Any], settings: Settings) -> bool:
    """Check this save for supersession? On by default, off for imports (they carry a time)."""
    wanted = item.get("supersede")
    if wanted is None:
        wanted = item.get("created_at_ms") is None
    return bool(
        settings.memories.supersede_enabled and wanted and item["kind"] in SUPERSEDING_KINDS
    )


def _detect_supersession(
    conn: AnyDb,
    memory_id: int,
    project_id: int | None,
    item: Mapping[str, Any],
    settings: Settings,
    result: Saved,
    similar: Mapping[int, float] | None = None,
) -> None:
    if not wants_supersession(item, settings):
        return
    mine = features(item["content"])
    if not (
        mine.negated
        or mine.cues
        or mine.contrast
        or mine.handed
        or mine.dated
        or any(k.value for k in mine.keys)
    ):
        return  # nothing that could replace a value: no value, negation, change, hand-over or date
    created = int(item.get("created_at_ms") or now_ms())
    scored: list[tuple[float, bool, Row]] = []
    rows = memories.text_candidates(conn, project_id, search_terms(mine), exclude_id=memory_id)
    close = {
        i: cos
        for i, cos in (similar or {}).items()
        if cos >= settings.memories.supersede_cosine and i != memory_id
    }
    listed = {int(r["id"]) for r in rows}
    rows += memories.live_rows(conn, project_id, [i for i in close if i not in listed])
    for row in rows:
        if row["kind"] not in SUPERSEDING_KINDS:
            continue
        theirs = features(row["content"])
        if row["kind"] == "decision":
            theirs = dataclasses.replace(theirs, decided=True)
        verdict = judge(mine, theirs, settings.memories.supersede_min_similarity)
        score = verdict.score if verdict.kind == "update" else None
        if (
            score is None
            and int(row["id"]) in close
            and may_update_by_meaning(mine, theirs, settings.memories.supersede_min_similarity)
        ):
            # Same meaning by their vectors, different values, nothing in the words that says
            # another fact: a paraphrased update.
            score = round(close[int(row["id"])], 4)
        if score is not None:
            scored.append((score, verdict.reversal, row))
    scored.sort(key=lambda entry: -entry[0])
    # A reversal said in words ("Decision reversed: ...") names one decision: the closest.
    reversals = [entry for entry in scored if entry[1]][:1]
    scored = [entry for entry in scored if not entry[1] or entry in reversals]
    for _score, _reversal, row in scored[:MAX_SUPERSEDED_PER_SAVE]:
        if int(row["created_at"]) > created:
            # An import older than what is stored: the stored memory stays the latest.
            relations_store.add(conn, int(row["id"]), memory_id, "updates", "supersession")
            result.superseded_by = int(row["id"])
            return
        relations_store.add(conn, memory_id, int(row["id"]), "updates", "supersession")
        result.superseded.append(int(row["id"]))
