"""Search's keyword half in the database (PostgreSQL, migration 6): the rows holding a term,
found through the GIN index of their analysed terms, and BM25's statistics, kept by triggers.

Frequencies and totals count every row, as the worker's in-memory index does (archived,
superseded and private rows too: which hits are live is decided later, retrieval/search.py).
A project's scope is its rows and the global ones (project -1 in the counters).
"""

from __future__ import annotations

from worker.store.db import AnyDb, as_db
from worker.store.keyword_terms import ANALYSED
from worker.store.m002_retrieval import KIND_CODES

GLOBAL = -1
# (rowid = id * 8 + kind code, title terms, body terms) of one row holding a term.
TermRow = tuple[int, str, str]


def _scope(project_id: int | None) -> tuple[str, tuple[int, ...]]:
    """The counters' condition for a scope (a global item counted under project -1)."""
    if project_id is None:
        return "", ()
    return " AND project_id IN (?, ?)", (project_id, GLOBAL)


def statistics(
    conn: AnyDb, terms: list[str], project_id: int | None = None
) -> tuple[dict[str, int], int, int]:
    """(rows holding each term, rows, analysed terms) in the scope (every project's for None),
    in one round trip."""
    df, _within, rows, tokens = scoped_statistics(conn, terms, project_id, None)
    return df, rows, tokens


def scoped_statistics(
    conn: AnyDb, terms: list[str], project_id: int | None, within: int | None
) -> tuple[dict[str, int], dict[str, int], int, int]:
    """statistics() in the scope of `project_id`, plus each term's rows in the narrower scope
    of `within` (the same when None), in one round trip."""
    where, args = _scope(project_id)
    inner, inner_args = _scope(within)
    df = dict.fromkeys(terms, 0)
    narrow = dict.fromkeys(terms, 0)
    rows = tokens = 0
    for term, count, count_within, length in as_db(conn).execute(
        "SELECT NULL, COALESCE(SUM(rows), 0), 0, COALESCE(SUM(tokens), 0) FROM keyword_totals "
        f"WHERE TRUE{where} UNION ALL "
        f"SELECT term, SUM(rows), COALESCE(SUM(rows) FILTER (WHERE TRUE{inner}), 0), 0 "
        f"FROM keyword_terms WHERE term = ANY(?){where} GROUP BY term",
        (*args, *inner_args, list(dict.fromkeys(terms)), *args),
    ):
        if term is None:
            rows, tokens = int(count), int(length)
        else:
            df[str(term)], narrow[str(term)] = int(count), int(count_within)
    return df, narrow, rows, tokens


def query_literal(term: str) -> str:
    """A one-term tsquery: the term quoted whole, never read as tsquery syntax."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def prefer_indexes(conn: AnyDb) -> None:
    """No sequential scan for the rest of this transaction (the keyword pass's). The planner
    guesses how many rows hold a word from its sampled statistics, and for a word they lack it
    chose to read a whole table (seen at 20k items: every memory read, none holding the new
    word) where the GIN index finds the few rows at once. The counters say how many rows hold
    the word, and rows_holding() asks for all of them or for the newest few."""
    as_db(conn).execute("SET LOCAL enable_seqscan = off")


def rows_holding(
    conn: AnyDb,
    term: str,
    *,
    kinds: list[str],
    project_id: int | None,
    limit: int,
    newest_first: bool,
) -> list[TermRow]:
    """Up to `limit` rows holding `term` of these kinds, in the scope. `newest_first` (a term
    in more rows than `limit`): the newest of each kind, the kinds in the order given, read
    backwards along the primary key; else every row, from the GIN index (a scan of the
    primary key would read the whole table to find a rare term's few rows)."""
    if not kinds or limit <= 0:
        return []
    # An item's own row: a global item's project is NULL.
    scope = "" if project_id is None else " AND (project_id = ? OR project_id IS NULL)"
    order = f" ORDER BY id DESC LIMIT {int(limit)}" if newest_first else ""
    parts, args = [], []
    for kind in kinds:
        parts.append(
            f"(SELECT id * 8 + {KIND_CODES[kind]}, index_title, index_body "
            f"FROM {ANALYSED[kind][0]} WHERE index_terms @@ ?::tsquery{scope}{order})"
        )
        args += [query_literal(term), *([] if project_id is None else [project_id])]
    rows = (
        as_db(conn)
        .execute(f"{' UNION ALL '.join(parts)} LIMIT {int(limit)}", tuple(args))
        .fetchall()
    )
    return [(int(r[0]), r[1] or "", r[2] or "") for r in rows]
