"""The default model with int8 matrix products: built once from the packaged model, then cached.

The packaged all-MiniLM-L6-v2 stores its weights as int8, but only to be small: the graph casts
them back to float32 and ONNX Runtime multiplies in float32, which on two cores is the whole cost
of background embedding, and the float32 copy of the weights sits in the worker's memory.
Dynamic quantization (onnxruntime.quantization, which needs the `onnx` package) rewrites every
weight MatMul of the int8-table model (int8_table.py) to an int8 product with per-channel weight
scales and activation scales computed at run time. Attention products (two activations) stay
float32; the embedding tables stay the packaged int8 ones.

An activation's scale is computed over the whole input of a run, so in a batch a text's vector
would depend on the texts beside it (cosine ~0.99 between a text alone and in a batch of 64),
and a decision taken at a threshold could flip with the company a text keeps. The embedder
therefore runs this model on one text at a time (OnnxEmbedder per_text: one run per text, each
on one core, a thread per core): a vector depends on its text alone, and short texts skip the
padding work of a batch. Measured on 2 cores (bench/search.py corpus): ~180 texts/s against
~118 for the float32 model, query embedding ~7 vs ~10 ms, worker RSS at 100k items ~28 MB
lower (78 MB lower right after loading); vectors within cosine ~0.99 of the float32 ones,
LoCoMo dev unchanged (hybrid recall@5/@10/MRR 63.5/74.2/0.522 vs 63.6/74.0/0.523; refusal
93.0%/1.4% vs 93.2%/1.4%).

The build runs once, in a child process (derived.py); any failure leaves the packaged model in
use, with the reason in the log.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path

from worker.retrieval.derived import STAMP, derived_model

__all__ = ["QUANTIZED_FOLDER", "RECIPE", "STAMP", "build", "quantized_model"]

# Part of the model id (`name@folder`): vectors stored under another recipe are re-embedded.
QUANTIZED_FOLDER = "all-MiniLM-L6-v2-onnx-int8-dynamic-per-text"
RECIPE = 4


def quantized_model(source: Path, models_dir: Path) -> Path | None:
    """A folder like `source` (tokenizer files linked) whose model.onnx is the quantized
    model.onnx of `source`; built if missing or made from another source. None if it cannot
    be built (the caller keeps the packaged model)."""
    return derived_model(
        source,
        models_dir,
        QUANTIZED_FOLDER,
        RECIPE,
        "worker.retrieval.quantize",
        "int8 embedding model",
    )


def build(source: Path, folder: Path) -> None:
    """Fold the packaged graph's int8 -> float32 weight casts (ONNX Runtime's basic
    optimisations), then quantize every MatMul with a constant weight, per channel."""
    import onnx
    import onnxruntime as ort  # type: ignore[import-untyped]
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        folded = Path(scratch) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(
            str(source / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        graph = onnx.load(str(folded)).graph
        weights = {init.name for init in graph.initializer}
        matmuls = [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
        if not matmuls:
            raise RuntimeError("no MatMul with a constant weight in the model")
        built = Path(scratch) / "model.onnx"
        quantize_dynamic(
            str(folded),
            str(built),
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_quantize=matmuls,
        )
        os.replace(built, folder / "model.onnx")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m worker.retrieval.quantize SOURCE_FOLDER TARGET_FOLDER")
        return 2
    logging.disable(logging.WARNING)  # quantize_dynamic's advice about pre-processing
    build(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
