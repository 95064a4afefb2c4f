"""Every decision a real-model test relies on keeps its margin with both kernels of the default
model (int8 and float32): the cosines the e2e tests meet sit MARGIN from the thresholds, so an
int8 kernel on another CPU gives the same answers (tests/vector_margins.py says how far)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tests.vector_margins import (
    CLI_NOTES,
    CLI_RELEASE,
    CLI_UNRELATED_QUERY,
    OLD_FACT,
    OTHER_FACT,
    PARAPHRASED_UPDATE,
    REFUND_PROMPT,
    REFUND_SESSION,
    SPREAD,
    UNRELATED_FACT,
    UNRELATED_PROMPTS,
    assert_ahead,
    assert_clear_of,
)
from worker.memory.statement import features
from worker.memory.supersession import supersedes, values_differ
from worker.retrieval.embedder import DEFAULT_MODEL, Embedder, load_embedder
from worker.retrieval.service import context_vector, embedding_text
from worker.settings import load_settings

pytestmark = pytest.mark.model

Vector = npt.NDArray[np.float32]
KERNELS = ("int8", "float32")


@pytest.fixture(scope="module")
def embedders(shared_models: Path) -> dict[str, Embedder]:
    return {
        kernel: load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=kernel == "int8")
        for kernel in KERNELS
    }


def thread(embedder: Embedder, texts: Sequence[str]) -> tuple[list[Vector], list[Vector]]:
    """Items saved one after another in one thread: their own vectors, and the vectors the index
    holds (each mixed with its predecessor's, as worker/retrieval/service.py does)."""
    weight = load_settings().embedding.context_weight
    refs = [("memory", i) for i in range(len(texts))]
    plain = dict(zip(refs, embedder.embed(list(texts)), strict=True))
    previous = [None, *refs[:-1]]
    mixed = [context_vector(plain, r, p, weight) for r, p in zip(refs, previous, strict=True)]
    return list(plain.values()), mixed


def cosine(embedder: Embedder, query: str, vector: Vector) -> float:
    return float(embedder.embed([query])[0] @ vector)


def test_paraphrased_supersession_is_decided_far_from_the_threshold(
    embedders: dict[str, Embedder],
) -> None:
    threshold = load_settings().memories.supersede_cosine
    # Only the vector can find this update: the word check sees another subject.
    assert supersedes(features(PARAPHRASED_UPDATE), features(OLD_FACT)) is None
    assert values_differ(features(PARAPHRASED_UPDATE), features(OLD_FACT))
    seen: dict[str, list[float]] = {}
    for kernel, embedder in embedders.items():
        _, index = thread(embedder, [OLD_FACT, OTHER_FACT, PARAPHRASED_UPDATE, UNRELATED_FACT])
        old, other, update = index[:3]
        figures = [
            cosine(embedder, PARAPHRASED_UPDATE, old),
            cosine(embedder, PARAPHRASED_UPDATE, other),
            cosine(embedder, UNRELATED_FACT, other),
            cosine(embedder, UNRELATED_FACT, update),
        ]
        seen[kernel] = figures
        assert_clear_of(figures[0], threshold, True, f"{kernel}: the update vs the old fact")
        assert_clear_of(figures[1], threshold, False, f"{kernel}: the update vs the other fact")
        assert_clear_of(figures[2], threshold, False, f"{kernel}: production vs staging")
        assert_clear_of(figures[3], threshold, False, f"{kernel}: production vs the update")
    _assert_kernels_agree(seen)


def test_refusal_and_order_are_decided_far_from_the_threshold(
    embedders: dict[str, Embedder],
) -> None:
    threshold = load_settings().judgment.refusal_min_cosine
    texts = [embedding_text({"kind": "observation", **o}, 2000) for o in REFUND_SESSION]
    cli = [*CLI_NOTES, f"{CLI_RELEASE['title']}\n{CLI_RELEASE['body']}"]
    seen: dict[str, list[float]] = {}
    for kernel, embedder in embedders.items():
        plain, index = thread(embedder, texts)
        # The refusal rule reads items' own vectors; search ranks by the index's.
        found = cosine(embedder, REFUND_PROMPT, plain[0])
        unrelated = [max(cosine(embedder, p, v) for v in plain) for p in UNRELATED_PROMPTS]
        ranked = sorted((cosine(embedder, REFUND_PROMPT, v) for v in index[1:]), reverse=True)
        cli_vectors = embedder.embed(cli)
        cli_best = float((embedder.embed([CLI_UNRELATED_QUERY])[0] @ cli_vectors.T).max())
        seen[kernel] = [found, *unrelated, ranked[0], cli_best]
        assert_clear_of(found, threshold, True, f"{kernel}: the refund prompt")
        for prompt, best in zip(UNRELATED_PROMPTS, unrelated, strict=True):
            assert_clear_of(best, threshold, False, f"{kernel}: {prompt!r}")
        assert_ahead(cosine(embedder, REFUND_PROMPT, index[0]), ranked[0], f"{kernel}: top hit")
        assert_clear_of(cli_best, threshold, False, f"{kernel}: {CLI_UNRELATED_QUERY!r}")
    _assert_kernels_agree(seen)


def _assert_kernels_agree(seen: dict[str, list[float]]) -> None:
    """The margins assume kernels move these cosines by at most SPREAD: check it here."""
    moved = float(np.abs(np.subtract(seen["int8"], seen["float32"])).max())
    assert moved <= SPREAD, f"int8 and float32 differ by {moved:.4f} > SPREAD {SPREAD}: {seen}"
