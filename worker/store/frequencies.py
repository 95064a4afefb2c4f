"""Document frequencies of keyword-index terms, remembered while the index barely changes.

A search reads the document frequency of each query term (which terms are worth matching, which
are broad, coverage weights for the refusal rule) and of its scope tokens (whether a project
filter goes into the FTS5 query). FTS5 answers by walking the term's whole doclist: ~0.5 ms for
a word in 6k of 100k items, 2-3 ms for a project's token held by 70k, a quarter of a keyword
search. The figures only weigh and choose terms, so one a few writes old is as good: an entry
is reused while the index holds within 1% of the rows it held when counted and for at most a
minute. A count of 0 is never reused (a word just written must be found at once).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

Count = Callable[[list[str]], dict[str, int]]

MAX_AGE_S = 60.0
MAX_TERMS = 50_000


class FrequencyCache:
    def __init__(self, max_age_s: float = MAX_AGE_S, max_terms: int = MAX_TERMS) -> None:
        self.max_age_s = max_age_s
        self.max_terms = max_terms
        self._entries: dict[str, tuple[int, int, float]] = {}  # term -> (df, index rows, at)
        self._lock = threading.Lock()

    def lookup(self, terms: Iterable[str], index_rows: int, count: Count) -> dict[str, int]:
        """Each term's document frequency: remembered, or counted now by `count(missing)`."""
        now = time.monotonic()
        slack = index_rows // 100
        found: dict[str, int] = {}
        missing: list[str] = []
        with self._lock:
            for term in dict.fromkeys(terms):
                entry = self._entries.get(term)
                if (
                    entry is not None
                    and abs(entry[1] - index_rows) <= slack
                    and now - entry[2] < self.max_age_s
                ):
                    found[term] = entry[0]
                else:
                    missing.append(term)
        if not missing:
            return found
        counted = count(missing)
        with self._lock:
            if len(self._entries) + len(counted) > self.max_terms:
                self._entries.clear()
            for term, df in counted.items():
                if df > 0:
                    self._entries[term] = (df, index_rows, now)
        found.update(counted)
        return found

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
