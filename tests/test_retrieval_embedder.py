"""The offline default model run on onnxruntime directly (OnnxEmbedder), against fastembed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from worker.retrieval.embedder import (
    DEFAULT_MODEL,
    ONNX_BATCH,
    FastEmbedder,
    OnnxEmbedder,
    prepare_default_model,
)
from worker.retrieval.service import embedding_text

TEXTS = [
    "postgres connection pool exhausted under load",
    "Edit src/billing/refunds.py\nold: total = sum(items)\nnew: total = sum(i.price for i in items)",
    "x",
    "",
    "Caroline went to the LGBTQ support group yesterday and found it really powerful. " * 3,
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_default_model(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def onnx(folder: Path) -> OnnxEmbedder:
    return OnnxEmbedder(DEFAULT_MODEL, folder, max_tokens=256)


@pytest.mark.model
def test_same_vectors_and_model_id_as_fastembed(folder: Path, onnx: OnnxEmbedder) -> None:
    # Stored vectors carry the model id: both runners must mean the same vectors by it.
    fast = FastEmbedder(DEFAULT_MODEL, folder, folder.parent)
    assert onnx.model_id == fast.model_id and onnx.dimensions == fast.dimensions == 384
    assert np.abs(onnx.embed(TEXTS) - fast.embed(TEXTS)).max() < 1e-5


@pytest.mark.model
def test_batching_and_padding_do_not_change_a_vector(onnx: OnnxEmbedder) -> None:
    texts = [f"item {i}: " + "retry the flaky upload " * (i % 7) for i in range(2 * ONNX_BATCH + 3)]
    together = onnx.embed(texts)
    alone = np.stack([onnx.embed([t])[0] for t in texts])
    assert np.abs(together - alone).max() < 1e-5
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_words_past_the_token_cap_are_not_embedded(onnx: OnnxEmbedder) -> None:
    head = " ".join(f"word{i}" for i in range(400))  # well past 256 word pieces
    capped, longer = onnx.embed([head, head + " kubernetes ingress certificate renewal"])
    assert np.abs(capped - longer).max() < 1e-6
    short = "kubernetes ingress"
    assert np.abs(onnx.embed([short])[0] - onnx.embed([short + " certificate"])[0]).max() > 1e-3


def test_embedding_text_does_not_repeat_files_the_title_names() -> None:
    item = {
        "kind": "observation",
        "title": "Edit src/app.py",
        "body": "old: a\nnew: b",
        "files": ["src/app.py", "src/other.py"],
    }
    assert embedding_text(item, 2000) == "Edit src/app.py\nold: a\nnew: b\nfiles: src/other.py"
    item["files"] = ["src/app.py"]
    assert embedding_text(item, 2000) == "Edit src/app.py\nold: a\nnew: b"
