"""A memory's closest clause to a prompt.

An explicit memory often packs a rule, its reason and an example into one text: "pgx: defer
rows.Close() right after every Query. Latest() returned early on a Scan error without closing,
leaking pool conns ...". A prompt touches one part of it ("a new store method that runs a query
and loops over the rows"), and the whole text's vector, averaged over every part, sits far from
the prompt (cosine 0.30) while the rule's own clause is close (0.43). So a memory is also judged
on the best cosine of its clauses (the relevance model's `clause` feature). Measured on the
coding-memory dev half (bench/coding_memory.py): relevant memories at or above 0.34 went from
16 to 20 of 26 pairs, unrelated ones from 2 to 7 of 194, before the relative floor.

Clause vectors are kept in a bounded cache keyed by the text (memories are few and rarely
change): the background embedder fills it as it embeds a memory and, after a start, for the
stored memories while it has nothing else to do; a prompt computes what is still missing. Only a
memory whose whole text has at least `MIN_WHOLE_COSINE` to the prompt is looked at: in the dev
half no memory that far off had a clause near the floor, and a cold memory costs ~7 ms (three
clauses) on this machine's 2 cores.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from worker.retrieval.embedder import Embedder
from worker.retrieval.vectors import Ref

# An aside in brackets after a space ("... chunksize (extract.COLUMNS); ..."), not a call's
# brackets (`rows.Close()`), is a clause of its own.
_ASIDE = re.compile(r"\s\(([^()]*)\)")
# Clause boundaries: a sentence or clause end followed by a space, a spaced dash.
_BOUNDARY = re.compile(r"(?<=[.;:!?])\s+|\s+[-\u2013\u2014]\s+")
# Shorter than this, a piece is a label ("Local dev", "e.g.") rather than a clause.
MIN_CLAUSE_CHARS = 13
# At most this many clauses of one memory are embedded (the rest of a long text is detail).
MAX_CLAUSES = 8
CACHE_ENTRIES = 4096
# A memory this far from the prompt as a whole is not split: none of its clauses came near the
# clause floor in the coding-memory dev half (the lowest whole cosine of a memory passing on a
# clause was 0.24).
MIN_WHOLE_COSINE = 0.2


def clauses(text: str) -> list[str]:
    """The clauses of a memory's text worth a vector of their own (none when the one clause is
    the whole text, whose vector already says it)."""
    asides = _ASIDE.findall(text)
    rest = _ASIDE.sub("", text)
    pieces = [p.strip() for p in [*_BOUNDARY.split(rest), *asides]]
    parts = [p for p in pieces if len(p) >= MIN_CLAUSE_CHARS]
    if parts == [text.strip()]:
        return []
    return parts[:MAX_CLAUSES]


class ClauseCosines:
    """Best clause cosine per memory, with the clause vectors cached by text."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self._entries = entries
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def _vectors(self, embedder: Embedder, text: str) -> npt.NDArray[np.float32] | None:
        with self._lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached
        parts = clauses(text)
        if not parts:
            return None
        matrix = np.asarray(embedder.embed(parts), dtype=np.float32)
        with self._lock:
            self._cache[text] = matrix
            while len(self._cache) > self._entries:
                self._cache.popitem(last=False)
        return matrix

    def warm(self, embedder: Embedder, texts: list[str]) -> None:
        """Compute and keep the clause vectors of these texts (the background embedder)."""
        for text in texts:
            self._vectors(embedder, text)

    def cached(self, text: str) -> bool:
        with self._lock:
            return text in self._cache

    def best(
        self, embedder: Embedder, query: npt.NDArray[np.float32], texts: Mapping[Ref, str]
    ) -> dict[Ref, float]:
        """Each text's best clause cosine to the query (texts of one clause are left out)."""
        out: dict[Ref, float] = {}
        for ref, text in texts.items():
            matrix = self._vectors(embedder, text)
            if matrix is not None:
                out[ref] = float(np.max(matrix @ query))
        return out
