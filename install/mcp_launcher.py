"""Start `cairn mcp` for the Claude Code plugin (stdlib only; any python3 can run it).

The plugin cannot know where the cairn package is installed, so this looks in order for: the
interpreter `cairn install` recorded in $CAIRN_HOME/install.json, a `cairn` executable on PATH,
and this interpreter if it can import Cairn. It then replaces itself with `cairn mcp`: Claude
Code starts it in the project folder, so it runs `python -P -m worker` (no current directory on
sys.path, PYTHONPATH without empty or relative entries) and never a `worker/` package of the
project's own.
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


RUN_MCP = ["-P", "-m", "worker", "mcp"]


def command() -> list[str] | None:
    python = recorded_python()
    if python:
        return [python, *RUN_MCP]
    executable = shutil.which("cairn")
    if executable and os.path.isabs(executable):  # not found through a relative PATH entry
        return [executable, "mcp"]
    if importlib.util.find_spec("worker.mcp_server") is not None:
        return [sys.executable, *RUN_MCP]
    return None


def environment() -> dict[str, str]:
    """This environment with PYTHONPATH's empty or relative entries (the project) dropped."""
    env = dict(os.environ)
    kept = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(p)]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    return env


def forget_relative_pythonpath() -> None:
    """Take off sys.path what an empty or relative PYTHONPATH entry put there (folders of the
    project), so that looking for Cairn below never imports a `worker` package of the project."""
    raw = os.environ.get("PYTHONPATH")
    if raw:
        relative = {os.path.abspath(p) for p in raw.split(os.pathsep) if not os.path.isabs(p)}
        sys.path[:] = [p for p in sys.path if p not in relative]


def main() -> int:
    forget_relative_pythonpath()
    argv = command()
    if argv is None:
        sys.stderr.write(
            "cairn: the Cairn Python package was not found. Install it (pip install cairn), run "
            "`cairn install --no-hooks` once to record its interpreter, then reload the plugin.\n"
        )
        return 1
    os.execve(argv[0], argv, environment())
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
