"""The context fence rule for every text the worker renders as context (and MCP output).

The rule lives in one file, hooks/cairn_hook_fence.py (stdlib only), because the hook that wraps
the injected block needs it too and cannot import the worker. Loading that file here, rather
than keeping a copy, means the hook and the worker cannot disagree on what a fence marker is.
"""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType

from worker.paths import data_dir


@functools.cache
def rule() -> ModuleType:
    """hooks/cairn_hook_fence.py, loaded once."""
    path = data_dir("hooks") / "cairn_hook_fence.py"
    spec = importlib.util.spec_from_file_location("worker._cairn_hook_fence", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"the context fence rule is missing: {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def neutralise(text: str) -> str:
    """`text` with no `<cairn-context>` / `</cairn-context>` marker in any spelling left."""
    result: str = rule().neutralise(text)
    return result


def markers(text: str) -> list[str]:
    """The fence markers found in `text` (as they read once normalised)."""
    found: list[str] = rule().markers(text)
    return found
