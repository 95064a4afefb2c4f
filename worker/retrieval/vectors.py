"""In-memory cosine index: one growing float32 matrix per project (global items in their own).

Vectors are L2-normalised, so cosine is a dot product; brute force over a contiguous matrix is a
few milliseconds at 100k rows (bench/search.py), which keeps the design simple. Rows are found
through an IdMap (kind and id -> bucket and row; 8 bytes an id where a dict of ints took 11.6 MB
at 100k items), and each row's ref is kept in two numpy columns.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from worker.retrieval.idmap import IdMap
from worker.store.m002_retrieval import KIND_CODES, KIND_NAMES

Ref = tuple[str, int]
_INITIAL_ROWS = 256
# A row's place in the index is one int: bucket number above these bits, row below them.
_ROW_BITS = 40


@dataclass
class _Bucket:
    dim: int
    matrix: npt.NDArray[np.float32] = field(init=False)
    kinds: npt.NDArray[np.int8] = field(init=False)  # 0 = an empty (dropped) row
    ids: npt.NDArray[np.int64] = field(init=False)
    used: int = 0

    def __post_init__(self) -> None:
        self.matrix = np.zeros((_INITIAL_ROWS, self.dim), dtype=np.float32)
        self.kinds = np.zeros(_INITIAL_ROWS, dtype=np.int8)
        self.ids = np.zeros(_INITIAL_ROWS, dtype=np.int64)

    def reserve(self, rows: int) -> None:
        if rows > self.matrix.shape[0]:
            self._resize(rows)

    def _resize(self, capacity: int) -> None:
        used = self.used
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[:used] = self.matrix[:used]
        kinds = np.zeros(capacity, dtype=np.int8)
        kinds[:used] = self.kinds[:used]
        ids = np.zeros(capacity, dtype=np.int64)
        ids[:used] = self.ids[:used]
        self.matrix, self.kinds, self.ids = matrix, kinds, ids

    def append(self, ref: Ref) -> int:
        row = self.used
        if row >= self.matrix.shape[0]:
            # Grow by a quarter: large matrices never sit half empty.
            self._resize(max(_INITIAL_ROWS, self.matrix.shape[0] + self.matrix.shape[0] // 4))
        self.kinds[row] = KIND_CODES[ref[0]]
        self.ids[row] = ref[1]
        self.used += 1
        return row

    def clear(self, row: int) -> None:
        self.matrix[row] = 0.0
        self.kinds[row] = 0

    def ref(self, row: int) -> Ref | None:
        code = int(self.kinds[row])
        return (KIND_NAMES[code], int(self.ids[row])) if code else None


class VectorIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._projects: dict[int | None, int] = {}  # project id -> bucket number
        self._buckets: list[_Bucket] = []
        self._places = IdMap()  # (kind code, id) -> bucket number << _ROW_BITS | row
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._places)

    def _bucket(self, project_id: int | None) -> int:
        number = self._projects.get(project_id)
        if number is None:
            number = self._projects[project_id] = len(self._buckets)
            self._buckets.append(_Bucket(self.dim))
        return number

    def _find(self, ref: Ref) -> tuple[_Bucket, int] | None:
        place = self._places.get(KIND_CODES[ref[0]], ref[1])
        if place is None:
            return None
        return self._buckets[place >> _ROW_BITS], place & ((1 << _ROW_BITS) - 1)

    def reserve(self, project_id: int | None, rows: int) -> None:
        """Size a project's matrix for `rows` vectors up front (no doubling overshoot)."""
        with self._lock:
            self._buckets[self._bucket(project_id)].reserve(rows)

    def put(self, ref: Ref, project_id: int | None, vector: npt.NDArray[np.float32]) -> None:
        with self._lock:
            code, number = KIND_CODES[ref[0]], self._bucket(project_id)
            place = self._places.get(code, ref[1])
            if place is not None and place >> _ROW_BITS != number:
                # Moved to another project: its old row is left empty.
                self._buckets[place >> _ROW_BITS].clear(place & ((1 << _ROW_BITS) - 1))
                place = None
            bucket = self._buckets[number]
            if place is None:
                place = number << _ROW_BITS | bucket.append(ref)
                self._places.set(code, ref[1], place)
            bucket.matrix[place & ((1 << _ROW_BITS) - 1)] = vector

    def drop(self, ref: Ref) -> None:
        with self._lock:
            found = self._find(ref)
            if found is not None:
                self._places.pop(KIND_CODES[ref[0]], ref[1])
                found[0].clear(found[1])

    def mix_predecessors(self, links: list[tuple[Ref, Ref]], weight: float) -> int:
        """Turn loaded item vectors into context vectors: v + weight * v(predecessor), normalised.

        `links` come newest item first, so each predecessor is read while it still holds its
        own vector (it is mixed later, being older). Returns how many rows were mixed."""
        mixed = 0
        with self._lock:
            for ref, prev in links:
                found, before = self._find(ref), self._find(prev)
                if found is None or before is None or found[0] is not before[0]:
                    continue
                matrix, row = found[0].matrix, found[1]
                vector = matrix[row] + weight * matrix[before[1]]
                norm = float(np.linalg.norm(vector))
                if norm > 0:
                    matrix[row] = vector / norm
                    mixed += 1
        return mixed

    def vector(self, ref: Ref) -> npt.NDArray[np.float32] | None:
        with self._lock:
            found = self._find(ref)
            if found is None:
                return None
            row: npt.NDArray[np.float32] = found[0].matrix[found[1]].copy()
            return row

    def search(
        self,
        query: npt.NDArray[np.float32],
        *,
        project_id: int | None,
        kinds: list[str] | None,
        limit: int,
    ) -> list[tuple[Ref, float]]:
        """Best `limit` (ref, cosine) in the project's bucket plus the global one (or all)."""
        codes = [KIND_CODES[k] for k in kinds] if kinds else None
        found: list[tuple[Ref, float]] = []
        with self._lock:
            if project_id is None:
                buckets = self._buckets
            else:
                buckets = [
                    self._buckets[n] for k, n in self._projects.items() if k in (project_id, None)
                ]
            for bucket in buckets:
                n = bucket.used
                if n == 0:
                    continue
                valid = bucket.kinds[:n] != 0
                if codes is not None:
                    valid &= np.isin(bucket.kinds[:n], codes)
                rows = np.flatnonzero(valid)
                if rows.size == 0:
                    continue
                if 2 * rows.size < n:
                    # A kind of few rows (the memories among months of tool calls): the
                    # product over those rows only, not over the whole bucket.
                    scores = bucket.matrix[rows] @ query
                else:
                    scores = (bucket.matrix[:n] @ query)[rows]
                take = min(limit, rows.size)
                for at in np.argpartition(-scores, take - 1)[:take]:
                    ref = bucket.ref(int(rows[at]))
                    if ref is not None:
                        found.append((ref, float(scores[at])))
        # Equal cosines (items of the same text) by ref: the database's index (db_vectors.py)
        # gives the same order, whatever order its graph yields them in.
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found[:limit]
