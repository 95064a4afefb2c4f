"""How Cairn starts its own modules in a child process, whatever the current directory holds.

`python -m worker` puts the current directory first on `sys.path`, so in a project with its own
`worker/` package it would run that project's code instead of Cairn. Every child Cairn starts
runs `python -P -m ...` (Python 3.11+: no current directory on `sys.path`), and its PYTHONPATH
keeps only absolute folders (an empty or relative entry would name the current directory again).
hooks/cairn_hook_io.py and install/mcp_launcher.py do the same in their stdlib-only copies.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

SAFE_PATH = "-P"


def module_argv(module: str, *args: str, python: str | None = None) -> list[str]:
    """`python -P -m module args...` (this interpreter unless `python` is given)."""
    return [python or sys.executable, SAFE_PATH, "-m", module, *args]


def child_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """A copy of `base` (the environment) with `extra` set and PYTHONPATH's relative or empty
    entries dropped."""
    env = dict(os.environ if base is None else base)
    env.update(extra)
    if "PYTHONPATH" in env:
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if os.path.isabs(p)]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del env["PYTHONPATH"]
    return env
