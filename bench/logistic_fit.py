"""L2-penalised logistic regression by Newton's method (numpy), for the scripts that fit the
worker's models (bench/train_relevance.py, bench/train_supersession.py); the worker reads what
they write with worker/logistic.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


@dataclass
class Fitted:
    columns: list[int]
    mean: Array
    scale: Array
    weights: Array
    bias: float

    def probability(self, x: Array) -> Array:
        z = self.bias + ((x[:, self.columns] - self.mean) / self.scale) @ self.weights
        return 1.0 / (1.0 + np.exp(-z))

    def document(self, names: list[str], threshold: float) -> dict[str, object]:
        """What worker/logistic.py reads: the kept features by name, rounded."""
        return {
            "features": [names[c] for c in self.columns],
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "weights": [round(float(v), 6) for v in self.weights],
            "bias": round(self.bias, 6),
            "threshold": threshold,
        }


def fit(x: Array, y: Array, w_row: Array, columns: list[int], penalty: float) -> Fitted:
    """Rows `x` (all features), labels `y` in {0, 1}, row weights (rescaled to sum to the row
    count); the penalty on the standardised weights, never on the bias."""
    x = x[:, columns]
    w_row = w_row * (len(w_row) / w_row.sum())
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    beta = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], penalty)
    reg[0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ beta)))
        grad = z.T @ (w_row * (p - y)) + reg * beta
        hess = (z * (w_row * p * (1 - p))[:, None]).T @ z + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return Fitted(columns, mean, scale, beta[1:], float(beta[0]))
