"""Search-side queries: keyword candidates, searchable items in one shape, counters, context rows."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from worker.store.frequencies import FrequencyCache
from worker.store.m002_retrieval import KIND_CODES, KIND_NAMES, SOURCES
from worker.store.rows import content_hash, load_json, ms, placeholders

KINDS = tuple(KIND_CODES)
TABLES = {"observation": "observations", "memory": "memories", "prompt": "prompts",
          "summary": "summaries"}  # fmt: skip
Ref = tuple[str, int]

_TITLE_CHARS = 120


# A project or kind filter that keeps at least this share of the index is applied after the
# FTS query instead of inside it: bm25() computes a document frequency for every phrase of the
# expression, and a `p<id>` scope token held by most rows costs a scan of its whole doclist
# (~15 ms at 100k rows) to filter out almost nothing.
SCOPE_IN_QUERY_BELOW = 0.5


def keyword_candidates(
    conn: sqlite3.Connection,
    match: str,
    *,
    project_id: int | None,
    kinds: Iterable[str] | None,
    limit: int,
    title_weight: float,
    body_weight: float,
    cache: FrequencyCache | None = None,
    index_rows: int | None = None,
) -> list[tuple[str, int, float]]:
    """(kind, id, score) best first; score = -bm25 (higher is better). Global items included.

    `match` is an FTS5 expression over the title and body of analysed terms (see
    terms.keyword_expression). Selective project and kind filters are added as `scope` tokens
    so FTS5 intersects doclists instead of reading rows; filters that keep most rows are
    applied to an over-fetched result instead (SCOPE_IN_QUERY_BELOW). `index_rows`: the
    caller's index_size(), when it has read it."""
    kind_list = [k for k in (kinds or ()) if k in KIND_CODES]
    if kinds is not None and not kind_list:
        return []
    n_rows = max(1, index_size(conn) if index_rows is None else index_rows)
    expression = f"({match})"
    fetch = float(limit)

    def in_query(tokens: list[str]) -> bool:
        """Add the scope filter to the expression if it is selective; else over-fetch."""
        nonlocal expression, fetch
        share = sum(document_frequencies(conn, tokens, cache, n_rows).values()) / n_rows
        if share < SCOPE_IN_QUERY_BELOW:
            expression += " AND scope : (" + " OR ".join(f'"{t}"' for t in tokens) + ")"
            return True
        fetch /= min(1.0, share)
        return False

    post_project: int | None = None
    if project_id is not None and not in_query([f"p{int(project_id)}", "pglobal"]):
        post_project = int(project_id)
    post_kinds: set[int] | None = None
    if kinds is not None and not in_query([f"k{k}" for k in kind_list]):
        post_kinds = {KIND_CODES[k] for k in kind_list}
    # The rowid encodes kind and id: selecting the UNINDEXED kind/item_id columns instead would
    # read every matching row's content before the sort (~1/3 of the query's time).
    rows = conn.execute(
        "SELECT rowid, bm25(search_index, ?, ?, 0, 0, 0, 0) AS rank FROM search_index "
        "WHERE search_index MATCH ? ORDER BY rank LIMIT ?",
        (title_weight, body_weight, expression, int(fetch) + (10 if fetch > limit else 0)),
    ).fetchall()
    found = [
        (KIND_NAMES[int(r[0]) % 8], int(r[0]) // 8, -float(r[1]))
        for r in rows
        if int(r[0]) % 8 in KIND_NAMES and (post_kinds is None or int(r[0]) % 8 in post_kinds)
    ]
    if post_project is not None:
        owners = project_ids(conn, [(kind, item_id) for kind, item_id, _ in found])
        found = [row for row in found if owners.get((row[0], row[1]), -1) in (post_project, None)]
    return found[:limit]


def project_ids(conn: sqlite3.Connection, refs: list[Ref]) -> dict[Ref, int | None]:
    """The project of each item (None for a global memory); missing items are left out."""
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        by_kind.setdefault(kind, []).append(item_id)
    out: dict[Ref, int | None] = {}
    for kind, ids in by_kind.items():
        rows = conn.execute(
            f"SELECT id, project_id FROM {SOURCES[kind][0]} "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
        out.update({(kind, int(r[0])): r[1] for r in rows})
    return out


def document_frequencies(
    conn: sqlite3.Connection,
    terms: list[str],
    cache: FrequencyCache | None = None,
    index_rows: int | None = None,
) -> dict[str, int]:
    """How many indexed items contain each analysed term (for query coverage weights); with a
    cache, a count a few writes old may be reused (see frequencies.py), judged against
    `index_rows` (read here if not given)."""
    if cache is not None:
        rows = index_size(conn) if index_rows is None else index_rows
        return cache.lookup(terms, rows, lambda missing: _count(conn, missing))
    return _count(conn, terms)


def _count(conn: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for term in terms:
        row = conn.execute("SELECT doc FROM search_vocab WHERE term = ?", (term,)).fetchone()
        out[term] = int(row[0]) if row is not None else 0
    return out


def index_size(conn: sqlite3.Connection) -> int:
    """Rows in search_index. FTS5 keeps the count as the first varint of its "averages" record
    (id 1 in %_data); reading it is O(1) where COUNT(*) walks every row (27 ms at 100k, most of
    a keyword search). Falls back to COUNT(*) if the record is missing or unreadable."""
    row = conn.execute("SELECT block FROM search_index_data WHERE id = 1").fetchone()
    if row is not None and isinstance(row[0], bytes) and row[0]:
        count = _sqlite_varint(row[0])
        if count is not None:
            return count
    return int(conn.execute("SELECT COUNT(*) FROM search_index").fetchone()[0])


def _sqlite_varint(blob: bytes) -> int | None:
    """Decode SQLite's big-endian varint (1-9 bytes) at the start of `blob`."""
    value = 0
    for k, byte in enumerate(blob[:9]):
        if k == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None


def indexed_terms(conn: sqlite3.Connection, refs: list[Ref]) -> dict[Ref, str]:
    """The analysed title+body text of items, as stored in the index."""
    out: dict[Ref, str] = {}
    for kind, item_id in refs:
        row = conn.execute(
            "SELECT title, body FROM search_index WHERE rowid = ?",
            (item_id * 8 + KIND_CODES[kind],),
        ).fetchone()
        if row is not None:
            out[(kind, item_id)] = f"{row[0]} {row[1]}"
    return out


# ---------------------------------------------------------------- items in one shape
def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1].rstrip() + "…"


def _summary_body(row: sqlite3.Row) -> str:
    parts = []
    for label, key in (
        ("Completed", "completed"),
        ("Learned", "learned"),
        ("Next", "next_steps"),
    ):
        value = (row[key] or "").strip()
        if value:
            parts.append(f"{label}: {value}")
    return "\n".join(parts)


_ITEM_SQL = {
    "observation": """SELECT o.id, o.project_id, p.key AS project, o.session_id, o.type,
        o.title, o.body, o.files, o.importance, 0 AS pinned, o.created_at, o.retrieval_count,
        o.archived_at, NULL AS superseded_by, NULL AS expires_at, o.content_hash, o.meta
        FROM observations o JOIN projects p ON p.id = o.project_id WHERE o.id IN ({ids})""",
    "memory": """SELECT m.id, m.project_id, p.key AS project, m.session_id, m.kind AS type,
        m.tags, m.content, m.importance, m.pinned, m.created_at, m.retrieval_count,
        m.archived_at, m.superseded_by, m.expires_at, m.content_hash, m.meta
        FROM memories m LEFT JOIN projects p ON p.id = m.project_id WHERE m.id IN ({ids})""",
    "prompt": """SELECT r.id, r.project_id, p.key AS project, r.session_id, r.number, r.text,
        r.created_at, r.meta FROM prompts r JOIN projects p ON p.id = r.project_id
        WHERE r.id IN ({ids})""",
    "summary": """SELECT s.id, s.project_id, p.key AS project, s.session_id, s.request,
        s.completed, s.learned, s.next_steps, s.files, s.updated_at AS created_at, s.meta
        FROM summaries s JOIN projects p ON p.id = s.project_id WHERE s.id IN ({ids})""",
}


def _item(kind: str, row: sqlite3.Row) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": kind,
        "id": int(row["id"]),
        "project_id": row["project_id"],
        "project": row["project"],
        "session_id": row["session_id"],
        "created_at": ms(row["created_at"], f"{TABLES[kind]}.created_at") or 0,
        "meta": load_json(row["meta"], field=f"{TABLES[kind]}.meta", kind=dict),
        "files": [],
        "importance": 2,
        "pinned": False,
        "retrieval_count": 0,
        "archived_at": None,
        "superseded_by": None,
        "expires_at": None,
    }
    if kind == "observation":
        base.update(
            type=row["type"],
            title=row["title"],
            body=row["body"],
            files=load_json(row["files"], [], field=f"{TABLES[kind]}.files"),
            importance=int(row["importance"]),
            retrieval_count=int(row["retrieval_count"]),
            archived_at=row["archived_at"],
            content_hash=row["content_hash"],
        )
    elif kind == "memory":
        content = row["content"]
        base.update(
            type=row["type"],
            title=_first_line(content),
            body=content,
            tags=load_json(row["tags"], [], field="memories.tags"),
            importance=int(row["importance"]),
            pinned=bool(row["pinned"]),
            retrieval_count=int(row["retrieval_count"]),
            archived_at=row["archived_at"],
            superseded_by=row["superseded_by"],
            expires_at=row["expires_at"],
            content_hash=row["content_hash"],
        )
    elif kind == "prompt":
        text = row["text"]
        base.update(
            type="prompt",
            title=_first_line(text),
            body=text,
            number=row["number"],
            content_hash=content_hash("prompt", " ".join(text.lower().split())),
        )
    else:
        body = _summary_body(row)
        base.update(
            type="summary",
            title=_first_line(row["request"] or "") or "Session summary",
            body=body,
            files=load_json(row["files"], [], field=f"{TABLES[kind]}.files"),
            importance=3,
            content_hash=content_hash("summary", row["request"] or "", body),
        )
    return base


def load_items(conn: sqlite3.Connection, refs: Iterable[Ref]) -> dict[Ref, dict[str, Any]]:
    """Items of any kind as one dict shape (title, body, importance, counters, flags...)."""
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        by_kind.setdefault(kind, []).append(item_id)
    out: dict[Ref, dict[str, Any]] = {}
    for kind, ids in by_kind.items():
        unique = sorted(set(ids))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            sql = _ITEM_SQL[kind].format(ids=placeholders(len(chunk)))
            for row in conn.execute(sql, chunk):
                out[(kind, int(row["id"]))] = _item(kind, row)
    return out


def count_retrievals(conn: sqlite3.Connection, refs: Iterable[Ref], at: int) -> None:
    """An explicit search or recall returned these items (injection never calls this)."""
    for kind, table in (("observation", "observations"), ("memory", "memories")):
        ids = [i for k, i in refs if k == kind]
        if ids:
            conn.execute(
                f"UPDATE {table} SET retrieval_count = retrieval_count + 1, "
                f"last_retrieved_at = ? WHERE id IN ({placeholders(len(ids))})",
                (at, *ids),
            )


def later_file_writes(
    conn: sqlite3.Connection, project_id: int, files: list[str], since: int
) -> dict[str, int]:
    """Newest file_write time per file, among writes after `since` (staleness evidence)."""
    if not files:
        return {}
    # One index probe per file (SQLite's min/max optimisation on (project_id, file, created_at));
    # a GROUP BY over `created_at > since` read every later write of every file instead.
    rows = conn.execute(
        """SELECT f.value, (SELECT MAX(w.created_at) FROM file_writes w
                             WHERE w.project_id = ? AND w.file = f.value)
           FROM json_each(?) f""",
        (project_id, json.dumps(sorted(set(files)))),
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows if r[1] is not None and int(r[1]) > since}


# ---------------------------------------------------------------- session-start context rows
def recent_observations(
    conn: sqlite3.Connection, project_id: int, limit: int
) -> list[dict[str, Any]]:
    ids = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM observations WHERE project_id = ? AND archived_at IS NULL "
            "ORDER BY created_at DESC, id DESC LIMIT ?",
            (project_id, limit),
        )
    ]
    items = load_items(conn, [("observation", i) for i in ids])
    return [items[("observation", i)] for i in ids if ("observation", i) in items]


def core_memories(
    conn: sqlite3.Connection, project_id: int | None, min_importance: int, now: int, limit: int
) -> list[dict[str, Any]]:
    """Pinned or important live memories of the project, and global ones (project NULL)."""
    rows = conn.execute(
        """SELECT id FROM memories
           WHERE (project_id = ? OR project_id IS NULL)
             AND archived_at IS NULL AND superseded_by IS NULL
             AND (expires_at IS NULL OR expires_at > ?)
             AND (pinned = 1 OR importance >= ?)
           ORDER BY pinned DESC, importance DESC, updated_at DESC, id DESC LIMIT ?""",
        (project_id, now, min_importance, limit),
    ).fetchall()
    ids = [int(r[0]) for r in rows]
    items = load_items(conn, [("memory", i) for i in ids])
    return [items[("memory", i)] for i in ids if ("memory", i) in items]


def latest_summary(conn: sqlite3.Connection, project_id: int) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT id FROM summaries WHERE project_id = ? ORDER BY updated_at DESC, id DESC LIMIT 1",
        (project_id,),
    ).fetchone()
    if row is None:
        return None
    return load_items(conn, [("summary", int(row[0]))]).get(("summary", int(row[0])))


def latest_checkpoint(
    conn: sqlite3.Connection, project_id: int, session_id: str | None
) -> dict[str, Any] | None:
    """The session's last checkpoint, else the project's."""
    row = None
    if session_id:
        row = conn.execute(
            "SELECT * FROM checkpoints WHERE session_id = ? ORDER BY created_at DESC, id DESC "
            "LIMIT 1",
            (session_id,),
        ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT * FROM checkpoints WHERE project_id = ? ORDER BY created_at DESC, id DESC "
            "LIMIT 1",
            (project_id,),
        ).fetchone()
    if row is None:
        return None
    return {
        "kind": "checkpoint",
        "id": int(row["id"]),
        "session_id": row["session_id"],
        "trigger": row["trigger"],
        "task": row["task"],
        "progress": row["progress"],
        "next_steps": row["next_steps"],
        "open_questions": row["open_questions"],
        "files": load_json(row["files"], [], field="checkpoints.files"),
        "created_at": ms(row["created_at"], "checkpoints.created_at") or 0,
    }


def top_files(conn: sqlite3.Connection, project_id: int, limit: int) -> list[tuple[str, int]]:
    """The files this project's sessions wrote most often."""
    rows = conn.execute(
        """SELECT file, COUNT(*) AS n FROM file_writes WHERE project_id = ?
           GROUP BY file ORDER BY n DESC, file LIMIT ?""",
        (project_id, limit),
    ).fetchall()
    return [(str(r[0]), int(r[1])) for r in rows]


def injected(conn: sqlite3.Connection, session_id: str) -> set[Ref]:
    return {
        (str(r[0]), int(r[1]))
        for r in conn.execute(
            "SELECT item_kind, item_id FROM context_injections WHERE session_id = ?",
            (session_id,),
        )
    }


def record_injections(conn: sqlite3.Connection, session_id: str, refs: list[Ref], at: int) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO context_injections(session_id, item_kind, item_id, injected_at) "
        "VALUES (?, ?, ?, ?)",
        [(session_id, kind, item_id, at) for kind, item_id in refs],
    )


# ---------------------------------------------------------------- neighbours (same thread)
_THREAD = {
    "observation": ("observations", "session_id"),
    "memory": ("memories", "session_id"),
    "prompt": ("prompts", "session_id"),
}


def neighbours(
    conn: sqlite3.Connection, refs: Iterable[Ref], window_ms: int
) -> dict[Ref, tuple[Ref | None, Ref | None]]:
    """Each item's previous and next item of the same kind, project and session, written
    within `window_ms` of it: the conversation or task it belongs to."""
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in refs:
        if kind in _THREAD:
            by_kind.setdefault(kind, []).append(item_id)
    out: dict[Ref, tuple[Ref | None, Ref | None]] = {}
    for kind, ids in by_kind.items():
        table, session = _THREAD[kind]
        # Row values, not `created_at < ? OR (created_at = ? AND id < ?)`: with ANALYZE statistics
        # the OR form made SQLite sort the whole session (14 ms a lookup in a 5k-row session).
        same = f"t.project_id IS x.project_id AND t.{session} IS x.{session}"
        sql = f"""SELECT x.id,
            (SELECT t.id FROM {table} t WHERE {same} AND (t.created_at, t.id) < (x.created_at, x.id)
               AND t.created_at >= x.created_at - ?1 ORDER BY t.created_at DESC, t.id DESC LIMIT 1),
            (SELECT t.id FROM {table} t WHERE {same} AND (t.created_at, t.id) > (x.created_at, x.id)
               AND t.created_at <= x.created_at + ?1 ORDER BY t.created_at, t.id LIMIT 1)
            FROM {table} x WHERE x.id IN (SELECT value FROM json_each(?2))"""
        for row in conn.execute(sql, (window_ms, json.dumps(sorted(set(ids))))):
            out[(kind, int(row[0]))] = (
                (kind, int(row[1])) if row[1] is not None else None,
                (kind, int(row[2])) if row[2] is not None else None,
            )
    return out
