"""The default model with int8 matrix products (worker.retrieval.quantize), built from the real
packaged model in a real child process."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from worker.retrieval.embedder import DEFAULT_MODEL, OnnxEmbedder, load_embedder
from worker.retrieval.quantize import QUANTIZED_FOLDER, STAMP, quantized_model

pytestmark = pytest.mark.model

TEXTS = [
    "postgres connection pool exhausted under load",
    "Edit src/billing/refunds.py\nold: total = sum(items)\nnew: total = sum(i.price for i in items)",
    "pytest tests/auth/test_tokens.py -x: 12 passed",
    "x",
    "Caroline went to the LGBTQ support group yesterday and found it really powerful.",
    "Melanie is planning a camping trip with her kids next month",
]


def test_the_quantized_model_gives_nearly_the_same_vectors(shared_models: Path) -> None:
    packaged = load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=False)
    quantized = load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=True)
    # Another model id: vectors stored by the packaged model are re-embedded, never mixed.
    assert quantized.model_id == f"{DEFAULT_MODEL}@{QUANTIZED_FOLDER}" != packaged.model_id
    assert quantized.dimensions == packaged.dimensions == 384
    a, b = packaged.embed(TEXTS), quantized.embed(TEXTS)
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    # 0.982 at worst here with AVX2's int8 kernel (it saturates; VNNI's lies nearer float32).
    assert float((a * b).sum(axis=1).min()) > 0.97
    # Similarities between texts, which is what search compares, barely move.
    assert float(np.abs(a @ a.T - b @ b.T).max()) < 0.05
    # Every weight product (6 layers x 6) is an int8 one; the attention products are not.
    import onnx  # type: ignore[import-untyped]

    graph = onnx.load(str(shared_models / QUANTIZED_FOLDER / "model.onnx")).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("MatMulInteger") == 36 and ops.count("MatMul") == 12


def test_a_vector_depends_on_its_text_alone(shared_models: Path) -> None:
    """Activation scales are per run, so the quantized model runs one text at a time: alone or
    beside other texts, in any order, a text gets the very same vector."""
    quantized = load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=True)
    assert isinstance(quantized, OnnxEmbedder)
    alone = np.stack([quantized.embed([t])[0] for t in TEXTS])
    assert np.array_equal(quantized.embed(TEXTS), alone)
    assert np.array_equal(quantized.embed(TEXTS[::-1]), alone[::-1])
    assert np.array_equal(quantized.embed(TEXTS * 5)[: len(TEXTS)], alone)


def test_the_quantized_model_reads_the_int8_tables(shared_models: Path) -> None:
    """Built from the int8-table model: no float32 copy of the word table either."""
    import onnx  # type: ignore[import-untyped]

    load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=True)
    graph = onnx.load(str(shared_models / QUANTIZED_FOLDER / "model.onnx")).graph
    big_floats = [
        i.name
        for i in graph.initializer
        if i.data_type == onnx.TensorProto.FLOAT and np.prod(i.dims) > 1_000_000
    ]
    assert big_floats == []


def test_built_once_and_rebuilt_when_the_source_changes(shared_models: Path) -> None:
    source = shared_models / "all-MiniLM-L6-v2-onnx-int8-table"
    load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=True)  # built (or cached)
    model = shared_models / QUANTIZED_FOLDER / "model.onnx"
    built_at = model.stat().st_mtime_ns
    assert quantized_model(source, shared_models) == shared_models / QUANTIZED_FOLDER
    assert model.stat().st_mtime_ns == built_at
    stamp = shared_models / QUANTIZED_FOLDER / STAMP
    stamp.write_text(json.dumps({"recipe": 0, "source_sha256": "another model"}))
    assert quantized_model(source, shared_models) is not None
    assert model.stat().st_mtime_ns != built_at
    assert json.loads(stamp.read_text())["recipe"] != 0
    OnnxEmbedder(DEFAULT_MODEL, shared_models / QUANTIZED_FOLDER)  # the rebuilt model loads


def test_a_model_that_cannot_be_quantized_leaves_the_packaged_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = tmp_path / "broken"
    source.mkdir()
    (source / "model.onnx").write_bytes(b"not an onnx graph")
    with caplog.at_level(logging.WARNING, logger="cairn.embeddings"):
        assert quantized_model(source, tmp_path / "models") is None
    assert "int8 embedding model not built, using the packaged one" in caplog.text
    assert not (tmp_path / "models" / QUANTIZED_FOLDER / STAMP).exists()


def test_callers_on_several_threads_get_the_same_vectors(shared_models: Path) -> None:
    """The background embedder and searches' query embeddings share one session and its pool."""
    from concurrent.futures import ThreadPoolExecutor

    quantized = load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256, quantize=True)
    texts = [*TEXTS, "", "word " * 600]  # an empty text; one past the token cap
    expected = quantized.embed(texts)
    assert np.allclose(np.linalg.norm(expected, axis=1), 1.0, atol=1e-5)
    with ThreadPoolExecutor(3) as callers:
        results = list(callers.map(lambda _: quantized.embed(texts), range(6)))
        singles = list(callers.map(lambda t: quantized.embed([t])[0], texts))
    assert all(np.array_equal(r, expected) for r in results)
    assert np.array_equal(np.stack(singles), expected)
