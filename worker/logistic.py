"""A fitted logistic regression read from a JSON file: p = sigmoid(bias + w . (x - mean) / scale).

The relevance model (worker/retrieval/relevance.py) is one of these; bench/train_relevance.py,
which fits it, writes `features`, `mean`, `scale`, `weights`, `bias` and `threshold` (the cut)
(bench/train_supersession.py writes the same for its study model). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Self


@dataclass(frozen=True)
class Logistic:
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], known: Collection[str], label: str) -> Self:
        """Read and check one model; `known` are the feature names its module computes."""
        names = tuple(str(n) for n in doc["features"])
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"{label} names unknown features: {unknown}")
        model = cls(
            features=names,
            mean=tuple(float(v) for v in doc["mean"]),
            scale=tuple(float(v) or 1.0 for v in doc["scale"]),
            weights=tuple(float(v) for v in doc["weights"]),
            bias=float(doc["bias"]),
            threshold=float(doc["threshold"]),
        )
        if not len(model.mean) == len(model.scale) == len(model.weights) == len(names):
            raise ValueError(f"{label}: features, mean, scale and weights differ in length")
        if not 0.0 < model.threshold < 1.0:
            raise ValueError(f"{label}: threshold must be inside (0, 1)")
        return model

    def logit(self, values: Mapping[str, float]) -> float:
        total = self.bias
        for name, mean, scale, weight in zip(
            self.features, self.mean, self.scale, self.weights, strict=True
        ):
            total += weight * (values.get(name, 0.0) - mean) / scale
        return total

    def probability(self, values: Mapping[str, float]) -> float:
        return sigmoid(self.logit(values))


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
