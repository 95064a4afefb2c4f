"""The embedder protocol (`embed(texts) -> float32 vectors`) and a deterministic fake for tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows (shape: len(texts) x dimensions)."""

    model_id: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> Vectors: ...


_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbedder:
    """Deterministic bag-of-hashed-words vectors: texts sharing words are close. Unit tests only."""

    def __init__(self, dimensions: int = 64) -> None:
        self.dimensions = dimensions
        self.model_id = f"fake-hash-{dimensions}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self.dimensions
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, index] += sign
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


def to_blob(vector: npt.NDArray[np.float32]) -> bytes:
    """Little-endian float32 bytes, as stored in the embeddings table."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)
