"""The keyword scorer of a team database: BM25 over the rows the database's GIN index finds.

It answers what the in-memory KeywordIndex (keyword_index.py) answers for search, by asking
the database (store/keyword_search.py), so a worker on a team database analyses no item at
start (53 s at 1M items) and holds no postings. The scores are the in-memory index's, term for
term: FTS5's BM25 over the same analysed terms, with the same frequencies and mean length (kept
by the database's triggers), summed in the query's term order; ties by rowid.

Only the rows that can reach the best `limit` are read (MaxScore): the terms are taken rarest
first, each term's rows read and scored whole; once the terms not yet read could together add
less than the current `limit`-th score, a row holding only those cannot enter, and reading stops.
A term in many rows (a query of common words only, at 1M items) is read at most `scan_rows`
rows, the newest first: past that the hits are the best of those rows, not of every row
(docs/team.md says so with the figures).
"""

from __future__ import annotations

import heapq
import math

from worker.retrieval.keyword_index import K1, SCOPE_TOKENS, B, KeywordIndex
from worker.store import keyword_search
from worker.store.db import AnyDb
from worker.store.m002_retrieval import KIND_NAMES

# Rows a query reads at most (all terms together): ~7 ms to read and score on 2 shared CPUs.
SCAN_ROWS = 1000
# uint8 counts in the in-memory index: a term's count in a title or body is capped alike.
MAX_COUNT = 255


class DatabaseKeywords:
    """Keyword search's statistics and best rows, from the team database."""

    ready = True
    state = "ready"

    def __init__(self, *, scan_rows: int = SCAN_ROWS) -> None:
        self.scan_rows = scan_rows
        # The last top()'s rows read, and whether it stopped at `scan_rows` (its hits then the
        # best of the rows read): for tests and bench/search_backends.py.
        self.rows_read = 0
        self.truncated = False

    def status(self) -> dict[str, object]:
        return {"status": "database (GIN)", "rows": None, "error": None}

    def frequencies(self, conn: AnyDb, terms: list[str]) -> tuple[dict[str, int], int]:
        """(rows holding each term, rows), over every project."""
        df, rows, _tokens = keyword_search.statistics(conn, terms)
        return df, rows

    def scope_frequencies(
        self, terms: list[str], project_id: int | None, conn: AnyDb | None = None
    ) -> tuple[dict[str, int], int]:
        """(rows holding each term, rows) among a project's rows and the global ones."""
        assert conn is not None  # the database is the index
        df, rows, _tokens = keyword_search.statistics(conn, terms, project_id)
        return df, rows

    def top(
        self,
        terms: list[str],
        *,
        project_id: int | None,
        kind_codes: list[int] | None,
        limit: int,
        title_weight: float,
        body_weight: float,
        conn: AnyDb | None = None,
    ) -> list[tuple[int, float]]:
        """(rowid, score) of the `limit` best rows holding any of `terms`, best first."""
        assert conn is not None
        self.rows_read, self.truncated = 0, False
        terms = list(dict.fromkeys(terms))
        if limit <= 0 or not terms:
            return []
        # Over every project (BM25's frequencies), and within the searched scope (how many rows
        # a term's search reads).
        df, in_scope, n_rows, tokens = keyword_search.scoped_statistics(
            conn, terms, None, project_id
        )
        if n_rows == 0:
            return []
        avg = (tokens + SCOPE_TOKENS * n_rows) / n_rows
        keyword_search.prefer_indexes(conn)
        idf: dict[str, float] = {}
        for term in terms:
            n = df[term]
            if n > 0:
                value = math.log((n_rows - n + 0.5) / (n + 0.5))
                idf[term] = value if value > 0 else 1e-6
        codes = sorted(kind_codes) if kind_codes is not None else sorted(KIND_NAMES)
        kinds = [KIND_NAMES[c] for c in codes if c in KIND_NAMES]
        # A term adds less than idf * (k1 + 1) to any row (freq / (freq + norm) < 1).
        order = sorted(idf, key=lambda t: (-idf[t], t))
        bound = [idf[t] * (K1 + 1) for t in order]
        scored: dict[int, float] = {}
        for i, term in enumerate(order):
            if len(scored) >= limit:
                threshold = heapq.nlargest(limit, scored.values())[-1]
                if sum(bound[i:]) <= threshold:
                    break
            budget = self.scan_rows - self.rows_read
            if budget <= 0:
                self.truncated = True
                break
            newest_first = in_scope[term] > budget
            rows = keyword_search.rows_holding(
                conn,
                term,
                kinds=kinds,
                project_id=project_id,
                limit=budget,
                newest_first=newest_first,
            )
            self.rows_read += len(rows)
            if newest_first and len(rows) >= budget:
                self.truncated = True
            for rowid, title, body in rows:
                if rowid not in scored:
                    scored[rowid] = _score(title, body, terms, idf, avg, title_weight, body_weight)
        best = heapq.nsmallest(limit, scored.items(), key=lambda pair: (-pair[1], pair[0]))
        return [(rowid, score) for rowid, score in best if score > 0]


def _score(
    title: str,
    body: str,
    terms: list[str],
    idf: dict[str, float],
    avg: float,
    title_weight: float,
    body_weight: float,
) -> float:
    """FTS5's BM25 of one row, as keyword_index.KeywordIndex.top sums it (same order, float64)."""
    head, rest = title.split(), body.split()
    norm = K1 * (1 - B + B * float(len(head) + len(rest) + SCOPE_TOKENS) / avg)
    score = 0.0
    for term in terms:
        weight = idf.get(term)
        if weight is None:
            continue
        in_title, in_body = min(head.count(term), MAX_COUNT), min(rest.count(term), MAX_COUNT)
        if in_title == 0 and in_body == 0:
            continue
        freq = title_weight * in_title + body_weight * in_body
        score += weight * freq * (K1 + 1) / (freq + norm)
    return score


# What search scores keywords with: the worker's copy (SQLite, or a team database before
# migration 6's terms) or the team database itself.
KeywordScorer = KeywordIndex | DatabaseKeywords
