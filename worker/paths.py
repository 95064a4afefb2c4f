"""Where the shipped data folders (hooks/, dashboard/, install/) are, installed or from a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """`hooks`, `dashboard` or `install`: inside the wheel (worker/_data/) or the repo root."""
    bundled = _PACKAGE / "_data" / name
    if bundled.is_dir():
        return bundled
    return _PACKAGE.parent / name


def hook_script() -> Path:
    return data_dir("hooks") / "cairn_hook.py"
