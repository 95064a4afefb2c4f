"""Where the shipped data folders (hooks/, dashboard/, install/) are, installed or from a checkout."""

from __future__ import annotations

import shlex
import shutil
import sys
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


def cairn_command() -> str:
    """How to run this Cairn from a shell: `cairn` when that name on PATH is this install, else
    this install's `cairn` script by absolute path (`make run` runs .venv/bin/cairn, which is
    not on PATH), else this interpreter with `-m worker`."""
    running = Path(sys.argv[0]) if Path(sys.argv[0]).name == "cairn" else None
    script = running or Path(sys.executable).parent / "cairn"
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m worker"
    on_path = shutil.which("cairn")
    if on_path is not None and Path(on_path).resolve() == script.resolve():
        return "cairn"
    return shlex.quote(str(script.absolute()))
