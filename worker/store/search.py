"""Search-side reads and writes: the indexed terms of hits, retrieval counters, staleness evidence."""

from __future__ import annotations

import json
from collections.abc import Iterable

from worker.store import index_rows
from worker.store.db import AnyDb, as_db
from worker.store.items import Ref
from worker.store.m002_retrieval import KIND_CODES, KIND_NAMES
from worker.store.privacy import shared_or_by
from worker.store.rows import placeholders


def session_prompts(conn: AnyDb, session_id: str, project_id: int | None) -> list[Ref]:
    """The prompts a session has stored in the project (the search scope), newest first."""
    where, args = ("", ()) if project_id is None else (" AND project_id = ?", (project_id,))
    rows = as_db(conn).execute(
        f"SELECT id FROM prompts WHERE session_id = ?{where} ORDER BY id DESC LIMIT 50",
        (session_id, *args),
    )
    return [("prompt", int(r[0])) for r in rows]


def indexed_terms(conn: AnyDb, refs: list[Ref]) -> dict[Ref, str]:
    """The analysed title+body text of items, as stored in the index."""
    db = as_db(conn)
    if db.dialect.writes_index_text:  # no stored terms: analysed as the index analyses them
        rows = index_rows.rows_of(db, [item_id * 8 + KIND_CODES[kind] for kind, item_id in refs])
        return {(KIND_NAMES[r[0] % 8], r[0] // 8): f"{r[1]} {r[2]}" for r in rows}
    out: dict[Ref, str] = {}
    for kind, item_id in refs:
        row = db.execute(
            "SELECT title, body FROM search_index WHERE rowid = ?",
            (item_id * 8 + KIND_CODES[kind],),
        ).fetchone()
        if row is not None:
            out[(kind, item_id)] = f"{row[0]} {row[1]}"
    return out


def count_retrievals(conn: AnyDb, refs: Iterable[Ref], at: int) -> None:
    """An explicit search or recall returned these items (injection never calls this)."""
    refs = list(refs)
    for kind, table in (("observation", "observations"), ("memory", "memories")):
        ids = [i for k, i in refs if k == kind]
        if ids:
            as_db(conn).execute(
                f"UPDATE {table} SET retrieval_count = retrieval_count + 1, "
                f"last_retrieved_at = ? WHERE id IN ({placeholders(len(ids))})",
                (at, *ids),
            )


def later_file_writes(conn: AnyDb, project_id: int, files: list[str], since: int) -> dict[str, int]:
    """Newest file_write time per file, among writes after `since` (staleness evidence)."""
    if not files:
        return {}
    # One index probe per file (SQLite's min/max optimisation on (project_id, file, created_at));
    # a GROUP BY over `created_at > since` read every later write of every file instead.
    db = as_db(conn)
    rows = db.execute(
        f"""SELECT f.value, (SELECT MAX(w.created_at) FROM file_writes w
                             WHERE w.project_id = ? AND w.file = f.value)
           FROM {db.dialect.json_array_values("?", "f")}""",
        (project_id, json.dumps(sorted(set(files)))),
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows if r[1] is not None and int(r[1]) > since}


def session_activity(conn: AnyDb, session_ids: Iterable[str]) -> dict[str, int]:
    """Observations recorded in each of these sessions (the relevance model's evidence that an
    earlier prompt led to work): tool work, not the agent's answer, which a question answered
    from general knowledge has too. Sessions with none are left out."""
    wanted = sorted({s for s in session_ids if s})
    if not wanted:
        return {}
    db = as_db(conn)
    rows = db.execute(
        f"""SELECT f.value, (SELECT COUNT(*) FROM observations o
             WHERE o.session_id = f.value AND o.type <> 'answer')
           FROM {db.dialect.json_array_values("?", "f")}""",
        (json.dumps(wanted),),
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows if r[1]}


# The tables whose items belong to a session, and the most rows one read takes from each.
_SESSION_TABLES = (("observation", "observations"), ("prompt", "prompts"), ("memory", "memories"))
SESSION_ROWS = 1000


def session_items(
    conn: AnyDb,
    project_id: int | None,
    session_ids: Iterable[str],
    span: tuple[int, int],
    reader: str | None = None,
) -> list[tuple[Ref, str, int]]:
    """The observations, prompts and memories of these sessions in the project written within
    `span` (epoch ms, both ends included), as (ref, session id, created_at): the stretches of
    work the relevance model's thread features read. A `reader` sees only the prompts and
    observations that are theirs or shared, as search does."""
    wanted = sorted({s for s in session_ids if s})
    if not wanted:
        return []
    db = as_db(conn)
    out: list[tuple[Ref, str, int]] = []
    for kind, table in _SESSION_TABLES:
        # Memories are never private; a teammate's prompts and observations may be.
        private = ""
        private_args: tuple[object, ...] = ()
        if reader is not None and kind != "memory":
            term, private_args = shared_or_by("t", reader)
            private = f" AND {term}"
        # The forms of store/items.neighbours: an index on (session_id, created_at) on SQLite
        # (m017), the thread index on PostgreSQL (pg/m004_search.py).
        sql = f"""SELECT t.id, t.session_id, t.created_at
            FROM {db.dialect.json_array_values("?", "f")}, {table} t
            WHERE {db.dialect.same_as("t.session_id", "f.value", "''")}
              AND {db.dialect.same_as(db.dialect.unindexed("t.project_id"), "?", "-1")}
              AND t.created_at BETWEEN ? AND ?{private}
            ORDER BY t.created_at, t.id LIMIT {SESSION_ROWS}"""
        args: tuple[object, ...] = (
            json.dumps(wanted),
            project_id,
            span[0],
            span[1],
            *private_args,
        )
        out += [((kind, int(r[0])), str(r[1]), int(r[2])) for r in db.execute(sql, args)]
    return out
