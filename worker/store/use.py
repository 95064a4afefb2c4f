"""What became of each injection (`context_injections`, migration 16): pending rows, outcomes,
and the counts the usefulness estimate and the dashboard read. SQLite and PostgreSQL alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from worker.store.db import AnyDb, as_db
from worker.store.items import Ref
from worker.store.stats import DAY_MS


@dataclass(frozen=True)
class Decided:
    kind: str
    item_id: int
    outcome: str
    evidence: str


def pending(conn: AnyDb, session_id: str) -> list[tuple[Ref, int]]:
    """The session's injections not judged yet: (item, injected_at), oldest first."""
    rows = as_db(conn).execute(
        "SELECT item_kind, item_id, injected_at FROM context_injections "
        "WHERE session_id = ? AND outcome IS NULL ORDER BY injected_at, item_kind, item_id",
        (session_id,),
    )
    return [((str(r[0]), int(r[1])), int(r[2])) for r in rows]


def decide(conn: AnyDb, session_id: str, decided: Sequence[Decided], at: int) -> int:
    """Record outcomes; an outcome given again replaces the earlier one. Rows changed."""
    db = as_db(conn)
    changed = 0
    for d in decided:
        cur = db.execute(
            "UPDATE context_injections SET outcome = ?, evidence = ?, decided_at = ? "
            "WHERE session_id = ? AND item_kind = ? AND item_id = ?",
            (d.outcome, d.evidence, at, session_id, d.kind, d.item_id),
        )
        changed += max(0, cur.rowcount)
    return changed


def latest_session(conn: AnyDb, ref: Ref) -> str | None:
    """The session that was given the item last (None: never given)."""
    row = (
        as_db(conn)
        .execute(
            "SELECT session_id FROM context_injections WHERE item_kind = ? AND item_id = ? "
            "ORDER BY injected_at DESC LIMIT 1",
            ref,
        )
        .fetchone()
    )
    return None if row is None else str(row[0])


def session_outcomes(conn: AnyDb, session_id: str) -> dict[Ref, dict[str, Any]]:
    """Every injection of the session with its outcome (None while pending)."""
    rows = as_db(conn).execute(
        "SELECT item_kind, item_id, injected_at, outcome, evidence, decided_at "
        "FROM context_injections WHERE session_id = ?",
        (session_id,),
    )
    return {
        (str(r[0]), int(r[1])): {
            "injected_at": int(r[2]),
            "outcome": r[3],
            "evidence": r[4],
            "decided_at": None if r[5] is None else int(r[5]),
        }
        for r in rows
    }


def history(conn: AnyDb, refs: Sequence[Ref]) -> dict[Ref, list[tuple[str, int, int | None]]]:
    """Each item's judged injections, any session: (outcome, decided_at, the id of the prompt
    it was given at: the session's last prompt stored by then, None if none)."""
    db = as_db(conn)
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        by_kind.setdefault(kind, []).append(item_id)
    out: dict[Ref, list[tuple[str, int, int | None]]] = {}
    for kind, ids in by_kind.items():
        rows = db.execute(
            "SELECT ci.item_id, ci.outcome, ci.decided_at, (SELECT p.id FROM prompts p "
            "WHERE p.session_id = ci.session_id AND p.created_at <= ci.injected_at "
            "ORDER BY p.created_at DESC, p.id DESC LIMIT 1) AS prompt_id "
            "FROM context_injections ci WHERE ci.item_kind = ? "
            f"AND {db.dialect.in_ids('ci.item_id')} AND ci.outcome IS NOT NULL",
            (kind, db.dialect.ids_parameter(sorted(set(ids)))),
        )
        for r in rows:
            prompt = None if r[3] is None else int(r[3])
            out.setdefault((kind, int(r[0])), []).append((str(r[1]), int(r[2] or 0), prompt))
    return out


def item_use(conn: AnyDb, kind: str, item_id: int) -> dict[str, Any]:
    """For the item's page: shown (judged sessions), used, ignored, contradicted, and the last
    evidence of use."""
    db = as_db(conn)
    rows = db.execute(
        "SELECT outcome, evidence, decided_at, session_id FROM context_injections "
        "WHERE item_kind = ? AND item_id = ? AND outcome IS NOT NULL ORDER BY decided_at DESC",
        (kind, item_id),
    ).fetchall()
    out: dict[str, Any] = {"shown": len(rows), "used": 0, "ignored": 0, "contradicted": 0}
    out["last_used"] = None
    for r in rows:
        outcome = str(r[0])
        if outcome in out:
            out[outcome] += 1
        if outcome == "used" and out["last_used"] is None:
            out["last_used"] = {"evidence": r[1], "at": int(r[2]), "session_id": r[3]}
    return out


def daily_rate(conn: AnyDb, since: int) -> list[tuple[int, int, int]]:
    """(day start in epoch ms, used, judged) per day with judged injections since `since`."""
    rows = as_db(conn).execute(
        "SELECT (decided_at / ?) * ? AS day, COUNT(*), "
        "SUM(CASE WHEN outcome = 'used' THEN 1 ELSE 0 END) FROM context_injections "
        "WHERE outcome IS NOT NULL AND decided_at >= ? GROUP BY day ORDER BY day",
        (DAY_MS, DAY_MS, since),
    )
    return [(int(r[0]), int(r[2] or 0), int(r[1])) for r in rows]
