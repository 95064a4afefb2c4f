"""In-memory cosine index: one growing float32 matrix per project (global items in their own).

Vectors are L2-normalised, so cosine is a dot product; brute force over a contiguous matrix is a
few milliseconds at 100k rows (bench/search.py), which keeps the design simple.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from worker.store.m002_retrieval import KIND_CODES

Ref = tuple[str, int]
_INITIAL_ROWS = 256


@dataclass
class _Bucket:
    dim: int
    matrix: npt.NDArray[np.float32] = field(init=False)
    kinds: npt.NDArray[np.int8] = field(init=False)
    refs: list[Ref | None] = field(default_factory=list)
    rows: dict[Ref, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.matrix = np.zeros((_INITIAL_ROWS, self.dim), dtype=np.float32)
        self.kinds = np.zeros(_INITIAL_ROWS, dtype=np.int8)

    def reserve(self, rows: int) -> None:
        if rows > self.matrix.shape[0]:
            self._resize(rows)

    def _resize(self, capacity: int) -> None:
        used = len(self.refs)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[:used] = self.matrix[:used]
        kinds = np.zeros(capacity, dtype=np.int8)
        kinds[:used] = self.kinds[:used]
        self.matrix, self.kinds = matrix, kinds

    def put(self, ref: Ref, vector: npt.NDArray[np.float32]) -> None:
        row = self.rows.get(ref)
        if row is None:
            row = len(self.refs)
            if row >= self.matrix.shape[0]:
                # Grow by a quarter: large matrices never sit half empty.
                self._resize(max(_INITIAL_ROWS, self.matrix.shape[0] + self.matrix.shape[0] // 4))
            self.refs.append(ref)
            self.rows[ref] = row
        self.matrix[row] = vector
        self.kinds[row] = KIND_CODES[ref[0]]

    def drop(self, ref: Ref) -> None:
        row = self.rows.pop(ref, None)
        if row is not None:
            self.refs[row] = None
            self.matrix[row] = 0.0
            self.kinds[row] = 0


class VectorIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._buckets: dict[int | None, _Bucket] = {}
        self._where: dict[Ref, int | None] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._where)

    def reserve(self, project_id: int | None, rows: int) -> None:
        """Size a project's matrix for `rows` vectors up front (no doubling overshoot)."""
        with self._lock:
            bucket = self._buckets.get(project_id)
            if bucket is None:
                bucket = self._buckets[project_id] = _Bucket(self.dim)
            bucket.reserve(rows)

    def put(self, ref: Ref, project_id: int | None, vector: npt.NDArray[np.float32]) -> None:
        with self._lock:
            previous = self._where.get(ref, project_id)
            if ref in self._where and previous != project_id:
                self._buckets[previous].drop(ref)
            bucket = self._buckets.get(project_id)
            if bucket is None:
                bucket = self._buckets[project_id] = _Bucket(self.dim)
            bucket.put(ref, vector)
            self._where[ref] = project_id

    def drop(self, ref: Ref) -> None:
        with self._lock:
            if ref in self._where:
                self._buckets[self._where.pop(ref)].drop(ref)

    def mix_predecessors(self, links: list[tuple[Ref, Ref]], weight: float) -> int:
        """Turn loaded item vectors into context vectors: v + weight * v(predecessor), normalised.

        `links` come newest item first, so each predecessor is read while it still holds its
        own vector (it is mixed later, being older). Returns how many rows were mixed."""
        mixed = 0
        with self._lock:
            for ref, prev in links:
                where = self._where.get(ref, -1)
                if where == -1 or self._where.get(prev, -1) != where:
                    continue
                bucket = self._buckets[where]
                matrix, row, prev_row = bucket.matrix, bucket.rows[ref], bucket.rows[prev]
                vector = matrix[row] + weight * matrix[prev_row]
                norm = float(np.linalg.norm(vector))
                if norm > 0:
                    matrix[row] = vector / norm
                    mixed += 1
        return mixed

    def vector(self, ref: Ref) -> npt.NDArray[np.float32] | None:
        with self._lock:
            if ref not in self._where:
                return None
            bucket = self._buckets[self._where[ref]]
            row: npt.NDArray[np.float32] = bucket.matrix[bucket.rows[ref]].copy()
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
                buckets = list(self._buckets.values())
            else:
                buckets = [b for k, b in self._buckets.items() if k in (project_id, None)]
            for bucket in buckets:
                n = len(bucket.refs)
                if n == 0:
                    continue
                scores = bucket.matrix[:n] @ query
                valid = bucket.kinds[:n] != 0
                if codes is not None:
                    valid &= np.isin(bucket.kinds[:n], codes)
                scores = np.where(valid, scores, -np.inf)
                take = min(limit, n)
                top = np.argpartition(-scores, take - 1)[:take]
                for row in top:
                    ref = bucket.refs[int(row)]
                    score = float(scores[int(row)])
                    if ref is not None and score > -np.inf:
                        found.append((ref, score))
        found.sort(key=lambda pair: -pair[1])
        return found[:limit]
