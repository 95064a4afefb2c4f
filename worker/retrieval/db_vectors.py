"""The vector index of a team database with pgvector: the database's HNSW index, not a matrix.

It answers what the in-memory VectorIndex (vectors.py) answers for search and memory
supersession, by asking the database (store/vector_search.py), so a worker on a team database
holds no item's vector: at 1M items the matrix was ~1.5 GB per worker, and minutes of loading
at start. What the embedder writes goes to the table (and so to the index) in its own write;
there is nothing to put, drop or follow here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from worker.store import vector_search
from worker.store.backend import Backend

Ref = tuple[str, int]


class DatabaseVectors:
    def __init__(self, store: Backend, model: str, dim: int) -> None:
        self.store = store
        self.model = model
        self.dim = dim

    def __len__(self) -> int:
        return self.store.read_sync(lambda c: vector_search.count(c, self.model))

    def search(
        self,
        query: npt.NDArray[np.float32],
        *,
        project_id: int | None,
        kinds: list[str] | None,
        limit: int,
    ) -> list[tuple[Ref, float]]:
        """Best `limit` (ref, cosine) of the project's items plus the global ones (or all)."""
        return self.store.read_sync(
            lambda c: vector_search.nearest(
                c, self.model, query, project_id=project_id, kinds=kinds, limit=limit
            )
        )

    def vectors(self, refs: list[Ref]) -> dict[Ref, npt.NDArray[np.float32]]:
        if not refs:
            return {}
        return self.store.read_sync(lambda c: vector_search.context_vectors(c, self.model, refs))

    def vector(self, ref: Ref) -> npt.NDArray[np.float32] | None:
        return self.vectors([ref]).get(ref)

    def drop(self, ref: Ref) -> None:
        """Nothing to do: the item's row left the table (and the index) with the item."""
