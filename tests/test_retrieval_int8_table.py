"""The default model with its embedding tables left in int8 (worker.retrieval.int8_table): built
from the real packaged model in a real child process, and the rewrite on small real graphs run
by onnxruntime."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx  # type: ignore[import-untyped]
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.hostile import hostile_project
from worker.retrieval.embedder import (
    DEFAULT_FOLDER,
    DEFAULT_MODEL,
    OnnxEmbedder,
    load_embedder,
    prepare_default_model,
)
from worker.retrieval.int8_table import FOLDER, int8_table_model, rewrite

TEXTS = [
    "postgres connection pool exhausted under load",
    "Edit src/billing/refunds.py\nold: total = sum(items)\nnew: total = sum(i.price for i in items)",
    "x",
    "Caroline went to the LGBTQ support group yesterday and found it really powerful.",
    "funzioni di pagamento: la funzione calcola il totale " * 20,
]


@pytest.mark.model
def test_the_default_model_gives_the_packaged_vectors_bit_for_bit(shared_models: Path) -> None:
    embedder = load_embedder(DEFAULT_MODEL, "", shared_models, 8, 256)
    packaged = OnnxEmbedder(DEFAULT_MODEL, prepare_default_model(shared_models))
    assert isinstance(embedder, OnnxEmbedder)
    # The same id as the packaged model: vectors stored before this rewrite stay valid.
    assert embedder.model_id == packaged.model_id == f"{DEFAULT_MODEL}@{DEFAULT_FOLDER}"
    assert np.array_equal(embedder.embed(TEXTS), packaged.embed(TEXTS))
    # What runs is the rewritten graph: the word and position tables are gathered as int8.
    graph = onnx.load(str(shared_models / FOLDER / "model.onnx")).graph
    int8 = {i.name for i in graph.initializer if i.data_type == TensorProto.INT8}
    tables = {n.input[0] for n in graph.node if n.op_type == "Gather" and n.input[0] in int8}
    assert len(tables) == 2  # words, positions
    assert not [n for n in graph.node if n.op_type == "Cast" and n.input[0] in tables]


@pytest.mark.model
def test_a_model_without_the_pattern_leaves_the_packaged_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = tmp_path / "plain"
    source.mkdir()
    onnx.save(_graph(np.ones((4, 3), np.float32), None), str(source / "model.onnx"))
    with caplog.at_level(logging.WARNING, logger="cairn.embeddings"):
        assert int8_table_model(source, tmp_path / "models") is None
    assert "int8-table model not built, using the packaged one" in caplog.text
    assert "no int8 embedding table" in caplog.text


def _graph(table: np.ndarray, scale: np.ndarray | None, also_read: bool = False) -> onnx.ModelProto:
    """ids -> Gather(Cast(table) * scale) (or Gather(table) with no scale): the packaged
    model's embedding lookup in miniature. `also_read`: the dequantized table is an output too."""
    nodes = []
    inits = [numpy_helper.from_array(table, "table")]
    data = "table"
    if scale is not None:
        inits.append(numpy_helper.from_array(scale, "scale"))
        nodes += [
            helper.make_node("Cast", ["table"], ["table_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["table_f", "scale"], ["table_deq"]),
        ]
        data = "table_deq"
    nodes.append(helper.make_node("Gather", [data, "ids"], ["rows"], axis=0))
    width = table.shape[1]
    outputs = [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [None, None, width])]
    if also_read:
        outputs.append(helper.make_tensor_value_info("table_deq", TensorProto.FLOAT, table.shape))
    graph = helper.make_graph(
        nodes,
        "lookup",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [None, None])],
        outputs,
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, ids: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["rows"], {"ids": ids})[0])


@pytest.mark.parametrize("scale_shape", [(6, 1), (), (1, 1)])
def test_the_rewrite_gives_the_same_rows(scale_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(7)
    table = rng.integers(-128, 128, size=(6, 4), dtype=np.int8)
    scale = rng.uniform(1e-4, 0.02, size=scale_shape).astype(np.float32)
    ids = np.array([[0, 5, 5, 2], [3, 1, 0, 4]], np.int64)
    before = _graph(table, scale)
    after = _graph(table, scale)
    assert rewrite(after.graph) == 1
    onnx.checker.check_model(after)
    assert "Mul" in [n.op_type for n in after.graph.node]
    assert all(n.input[0] != "table" for n in after.graph.node if n.op_type == "Cast")
    assert np.array_equal(_run(before, ids), _run(after, ids))


def test_lookups_the_rewrite_must_not_touch() -> None:
    rng = np.random.default_rng(8)
    table = rng.integers(-128, 128, size=(6, 4), dtype=np.int8)
    # The dequantized table is read by something else too: folding it stays necessary.
    shared = _graph(table, np.full((6, 1), 0.01, np.float32), also_read=True)
    assert rewrite(shared.graph) == 0
    # A scale per column is not a scale per gathered row.
    columns = _graph(table, np.full((1, 4), 0.01, np.float32))
    assert rewrite(columns.graph) == 0
    # A float table has nothing to save.
    assert rewrite(_graph(table.astype(np.float32), None).graph) == 0


@pytest.mark.model
def test_the_build_runs_cairns_module_from_a_folder_with_its_own_worker_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child process runs Cairn's `worker.retrieval.int8_table`, not a `worker` package in
    the current directory (the worker may run from any project folder)."""
    marker = hostile_project(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    source = tmp_path / "small"
    source.mkdir()
    rng = np.random.default_rng(9)
    table = rng.integers(-128, 128, size=(6, 4), dtype=np.int8)
    onnx.save(_graph(table, np.full((6, 1), 0.01, np.float32)), str(source / "model.onnx"))
    built = int8_table_model(source, tmp_path / "models")
    assert not marker.exists(), marker.read_text()
    assert built is not None and (built / "model.onnx").is_file()
