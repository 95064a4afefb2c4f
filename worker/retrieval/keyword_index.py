"""The keyword scorer: an in-memory copy of the FTS5 keyword index that scores BM25 with numpy.

FTS5 computes bm25() row by row through its auxiliary-function API: about 2 us for every row a
query selects, so a search whose words are in 10k of 100k items spent 20+ ms there. This index
holds the same analysed terms as postings (per term: item slots and the term's count in title
and body) and scores a query with a few array operations, using FTS5's formula: per term
idf * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgD)), f the column-weighted count, D the row's
token count over all columns, idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6.

It follows `search_index` through the `search_changes` log (migration 10): before each query it
re-reads the rows changed since it last looked, so a search sees every committed write, whatever
path (or, on PostgreSQL, whichever worker) wrote it. Removed rows are only marked dead; `load()` (at worker start) builds a compact copy.
A search that comes before the first load waits for it (`ensure_loaded`). FTS5 stays the truth
the copy is built from (the triggers analyse and store every write); its bm25() is no longer on
the search path (docs/how-it-works.md says why).
"""

from __future__ import annotations

import logging
import math
import threading
from array import array
from typing import Any

import numpy as np
import numpy.typing as npt

from worker.heap import release_freed_memory
from worker.retrieval.idmap import IdMap
from worker.store import index_rows
from worker.store.db import AnyDb

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
# The `scope` column holds two tokens per row (`k<kind> p<project>`): FTS5 counts them in D.
SCOPE_TOKENS = 2
GLOBAL = -1
# Rows analysed per numpy pass when building.
BUILD_BATCH = 2048
# Past these (and a quarter of the rows / as many postings as were loaded) a fresh copy is
# built. Rows added since loading cost a query little (their postings are unpacked per term,
# ~0.1 ms for 20k) and 2 bytes a posting more than loaded ones, while a rebuild takes a core
# for seconds at 100k rows: during bulk imports it is worth doing seldom.
REBUILD_DEAD_ROWS = 20_000
REBUILD_DELTA_POSTINGS = 4_000_000

IntArray = npt.NDArray[np.int32]


class KeywordIndex:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Held while a copy is built: a search needing the first copy waits for that build.
        self._load_lock = threading.Lock()
        self.ready = False
        self.generation = 0
        # "idle" (not asked to load), "loading", "ready" or "failed" (see `error`).
        self.state = "idle"
        self.error: str | None = None
        # Set when removed and added rows make a fresh copy worth building (load() again).
        self.wants_rebuild = False
        self._reset()

    def status(self) -> dict[str, object]:
        """For GET /api/status: whether keyword search scores from memory, over how many rows."""
        return {"status": self.state, "rows": self._live, "error": self.error}

    def _reset(self) -> None:
        self._seq = 0
        self._used = 0
        self._live = 0
        self._tokens = 0
        cap = 1024
        self._rowid = np.zeros(cap, np.int64)
        self._length = np.zeros(cap, np.float32)
        self._project = np.zeros(cap, np.int64)
        self._kind = np.zeros(cap, np.uint8)
        self._alive = np.zeros(cap, bool)
        self._slot_by_row = IdMap()  # (kind code, item id) of a live row -> its slot
        # Postings loaded at build time, one contiguous run per term (CSR) ...
        self._vocab: dict[str, int] = {}
        self._offsets: npt.NDArray[np.int64] = np.zeros(1, np.int64)
        self._base_slots: IntArray = np.zeros(0, np.int32)
        self._base_title: npt.NDArray[np.uint8] = np.zeros(0, np.uint8)
        self._base_body: npt.NDArray[np.uint8] = np.zeros(0, np.uint8)
        # ... and those of rows added since, by term id: slot << 16 | title << 8 | body.
        self._delta: dict[int, array[int]] = {}
        self._delta_postings = 0

    # ------------------------------------------------------------------ loading
    def load(self, conn: AnyDb) -> None:
        """Build from the whole table (seconds at 100k rows), then swap in and mark ready."""
        with self._load_lock:
            self._load(conn)

    def ensure_loaded(self, conn: AnyDb) -> None:
        """Load now unless a copy is in use; a load under way elsewhere is waited for."""
        if self.ready:
            return
        with self._load_lock:
            if not self.ready:
                self._load(conn)

    def _load(self, conn: AnyDb) -> None:
        with self._lock:
            generation = self.generation
            self.state, self.error = ("rebuilding" if self.ready else "loading"), None
        fresh = KeywordIndex()
        fresh._build(conn)
        release_freed_memory()
        with self._lock:
            if generation != self.generation:
                return  # unloaded meanwhile: this copy belongs to another file
            kept = ("_lock", "_load_lock", "generation", "state", "error")
            self.__dict__.update({k: v for k, v in fresh.__dict__.items() if k not in kept})
            self.ready, self.state = True, "ready"
            self._sync(conn)
        log.info("keyword index loaded: %d rows", self._live)

    def _build(self, conn: AnyDb) -> None:
        self._seq = index_rows.last_change(conn)
        chunks = [self._analyse(batch) for batch in index_rows.all_rows(conn, BUILD_BATCH)]
        if not chunks:
            return
        terms = np.concatenate([c[0] for c in chunks])
        order = np.argsort(terms, kind="stable")  # rows stay in slot order within a term
        self._base_slots = np.concatenate([c[1] for c in chunks])[order]
        self._base_title = np.concatenate([c[2] for c in chunks])[order]
        self._base_body = np.concatenate([c[3] for c in chunks])[order]
        self._offsets = np.concatenate(
            [[0], np.cumsum(np.bincount(terms, minlength=len(self._vocab)))]
        ).astype(np.int64)

    def _analyse(self, rows: list[Any]) -> tuple[Any, Any, Any, Any]:
        """Give each (rowid, title, body, project_id) row a slot; its postings as arrays (term
        id, slot, count in title, count in body) sorted by term then slot. Counted with numpy:
        a Python loop per posting took ~2 us (12 s for 6M postings)."""
        vocab = self._vocab
        words: list[str] = []
        owners: list[int] = []
        in_body: list[bool] = []
        for rowid, title, body, project_id in rows:
            head = title.split() if title else []
            rest = body.split() if body else []
            slot = self._new_slot(int(rowid), len(head) + len(rest), project_id)
            words += head
            words += rest
            owners += [slot] * (len(head) + len(rest))
            in_body += [False] * len(head)
            in_body += [True] * len(rest)
        found: list[int | None] = list(map(vocab.get, words))
        if None in found:  # words new to the index (after warm-up, a few per batch)
            for i, tid in enumerate(found):
                if tid is None:
                    found[i] = vocab.setdefault(words[i], len(vocab))
        ids = np.array(found, np.int64)
        key = (ids << 33) | (np.array(owners, np.int64) << 1) | np.array(in_body, np.int64)
        pairs, counts = np.unique(key, return_counts=True)
        posting, which = np.unique(pairs >> 1, return_inverse=True)
        title_n = np.zeros(len(posting), np.int64)
        body_n = np.zeros(len(posting), np.int64)
        is_body = (pairs & 1) == 1
        np.add.at(body_n, which[is_body], counts[is_body])
        np.add.at(title_n, which[~is_body], counts[~is_body])
        return (
            (posting >> 32).astype(np.int32),
            (posting & 0xFFFFFFFF).astype(np.int32),
            np.minimum(title_n, 255).astype(np.uint8),
            np.minimum(body_n, 255).astype(np.uint8),
        )

    # ------------------------------------------------------------------ following changes
    def _sync(self, conn: AnyDb) -> None:
        changed = index_rows.changes_since(conn, self._seq)
        if not changed:
            return
        rids = sorted({rid for rid, _ in changed})
        for rid in rids:
            self._remove(rid)
        rows = index_rows.rows_of(conn, rids)
        if rows:
            terms, slots, title, body = self._analyse(rows)
            packed = (slots.astype(np.int64) << 16) | (title.astype(np.int64) << 8) | body
            # `terms` is sorted: each term's postings are one run (none if no row had a word).
            ids, starts = np.unique(terms, return_index=True)
            ends = np.append(starts[1:], len(terms)) if len(terms) else starts
            for tid, a, b in zip(ids.tolist(), starts.tolist(), ends.tolist(), strict=True):
                extra = self._delta.get(tid)
                if extra is None:
                    extra = self._delta[tid] = array("q")
                extra.frombytes(packed[a:b].tobytes())
            self._delta_postings += len(terms)
        self._seq = max(self._seq, changed[-1][1])  # read in seq order
        if not self.wants_rebuild and self._stale():
            self.wants_rebuild = True

    def refresh(self, conn: AnyDb) -> None:
        """Apply committed changes now (the worker does every second, off the query path)."""
        with self._lock:
            if self.ready:
                self._sync(conn)

    def _stale(self) -> bool:
        """Enough removed rows, or rows added since loading, that a fresh copy pays off."""
        dead = self._used - self._live
        return dead > max(REBUILD_DEAD_ROWS, self._used // 4) or self._delta_postings > max(
            REBUILD_DELTA_POSTINGS, len(self._base_slots)
        )

    def _remove(self, rowid: int) -> None:
        slot = self._slot_by_row.pop(rowid % 8, rowid // 8)
        if slot is None:
            return
        if self._alive[slot]:
            self._alive[slot] = False
            self._live -= 1
            self._tokens -= int(self._length[slot])

    def _new_slot(self, rowid: int, words: int, project: object) -> int:
        """A slot for a row of `words` analysed terms (title and body)."""
        slot = self._used
        if slot == len(self._rowid):
            grow = max(1024, slot)
            for name in ("_rowid", "_length", "_project", "_kind", "_alive"):
                column = getattr(self, name)
                setattr(self, name, np.concatenate([column, np.zeros(grow, column.dtype)]))
        length = words + SCOPE_TOKENS
        self._rowid[slot] = rowid
        self._length[slot] = length
        self._project[slot] = int(project) if isinstance(project, int) else GLOBAL
        self._kind[slot] = rowid % 8
        self._alive[slot] = True
        self._slot_by_row.set(rowid % 8, rowid // 8, slot)
        self._used += 1
        self._live += 1
        self._tokens += length
        return slot

    # ------------------------------------------------------------------ queries
    def _postings(self, term: str) -> tuple[IntArray, npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
        """The term's live postings: slots, counts in title, counts in body."""
        parts = []
        tid = self._vocab.get(term)
        if tid is None:
            tid = -1
        elif tid + 1 < len(self._offsets):
            a, b = int(self._offsets[tid]), int(self._offsets[tid + 1])
            parts.append((self._base_slots[a:b], self._base_title[a:b], self._base_body[a:b]))
        extra = self._delta.get(tid)
        if extra is not None:
            parts.append(_unpack(np.frombuffer(extra, np.int64)))
        if not parts:
            empty = np.zeros(0, np.int32)
            return empty, empty.astype(np.uint8), empty.astype(np.uint8)
        if len(parts) == 1:
            slots, title, body = parts[0]
        else:
            slots = np.concatenate([p[0] for p in parts])
            title = np.concatenate([p[1] for p in parts])
            body = np.concatenate([p[2] for p in parts])
        live = self._alive[slots]
        return slots[live], title[live], body[live]

    def frequencies(self, conn: AnyDb, terms: list[str]) -> tuple[dict[str, int], int]:
        """(rows holding each term, rows in the index), after applying committed changes (and
        loading, for the first search)."""
        self.ensure_loaded(conn)
        with self._lock:
            self._sync(conn)
            return {t: len(self._postings(t)[0]) for t in terms}, self._live

    def scope_frequencies(
        self, terms: list[str], project_id: int | None, conn: AnyDb | None = None
    ) -> tuple[dict[str, int], int]:
        """(rows holding each term, rows) among a project's rows and the global ones (all rows
        for None), as of the last frequencies() or refresh(). One pass over each term's
        postings and one over the row owners: well under a millisecond at 10k rows."""
        with self._lock:
            if project_id is None:
                return {t: len(self._postings(t)[0]) for t in terms}, self._live
            owner = self._project[: self._used]
            inside = ((owner == project_id) | (owner == GLOBAL)) & self._alive[: self._used]
            counts = {t: int(np.count_nonzero(inside[self._postings(t)[0]])) for t in terms}
            return counts, int(np.count_nonzero(inside))

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
        """(rowid, score) of the `limit` best rows holding any of `terms`, best first (score as
        -bm25() of FTS5 for `{title body} : (t1 OR t2 ...)`; ties by rowid). A project filter
        keeps that project's rows and the global ones. Scores the rows as of the last
        frequencies() or refresh(): a search calls frequencies() first, which applies the
        committed changes once for both."""
        with self._lock:
            if self._live == 0 or limit <= 0:
                return []
            n_rows = self._live
            avg = self._tokens / n_rows
            scores = np.zeros(self._used, np.float64)
            for term in dict.fromkeys(terms):
                slots, title, body = self._postings(term)
                n = len(slots)
                if n == 0:
                    continue
                idf = math.log((n_rows - n + 0.5) / (n + 0.5))
                idf = idf if idf > 0 else 1e-6
                freq = title_weight * title.astype(np.float64) + body_weight * body
                norm = K1 * (1 - B + B * self._length[slots].astype(np.float64) / avg)
                scores[slots] += idf * freq * (K1 + 1) / (freq + norm)
            keep = scores > 0
            if project_id is not None:
                owner = self._project[: self._used]
                keep &= (owner == project_id) | (owner == GLOBAL)
            if kind_codes is not None:
                keep &= np.isin(self._kind[: self._used], kind_codes)
            found = np.flatnonzero(keep)
            if len(found) > limit:
                found = found[np.argpartition(-scores[found], limit - 1)[:limit]]
            rowids = self._rowid[found]
            order = np.lexsort((rowids, -scores[found]))
            return [(int(rowids[i]), float(scores[found[i]])) for i in order]


def _unpack(packed: npt.NDArray[np.int64]) -> tuple[Any, Any, Any]:
    """Slots (int32), counts in title and in body (uint8) of packed postings."""
    return (
        (packed >> 16).astype(np.int32),
        ((packed >> 8) & 255).astype(np.uint8),
        (packed & 255).astype(np.uint8),
    )
