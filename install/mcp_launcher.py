"""Start `cairn mcp` for the Claude Code plugin (stdlib only; any python3 can run it).

The plugin cannot know where the cairn package is installed, so this looks in order for: the
interpreter `cairn install` recorded in $CAIRN_HOME/install.json, a `cairn` executable on PATH,
and this interpreter if it can import Cairn. It then replaces itself with `cairn mcp`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys


def cairn_home() -> str:
    return os.environ.get("CAIRN_HOME") or os.path.join(os.path.expanduser("~"), ".cairn")


def recorded_python() -> str | None:
    try:
        with open(os.path.join(cairn_home(), "install.json"), encoding="utf-8") as handle:
            python = json.load(handle).get("python")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(python, str) and os.access(python, os.X_OK):
        return python
    return None


def command() -> list[str] | None:
    python = recorded_python()
    if python:
        return [python, "-m", "worker", "mcp"]
    executable = shutil.which("cairn")
    if executable:
        return [executable, "mcp"]
    if importlib.util.find_spec("worker.mcp_server") is not None:
        return [sys.executable, "-m", "worker", "mcp"]
    return None


def main() -> int:
    argv = command()
    if argv is None:
        sys.stderr.write(
            "cairn: the Cairn Python package was not found. Install it (pip install cairn), run "
            "`cairn install --no-hooks` once to record its interpreter, then reload the plugin.\n"
        )
        return 1
    os.execv(argv[0], argv)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
