"""`cairn hook <event>`: the stdlib hook script run in this process.

This is what `cairn install --project` registers, so a committed settings file names no path of
one machine. It runs on every tool call, so it imports nothing of the CLI (see worker/__main__.py)
and not even pathlib or runpy: only what the hook script itself needs.
"""

from __future__ import annotations

import os
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def hook_script_path() -> str:
    """worker.paths.hook_script() as a string: in the wheel (worker/_data/) or the checkout."""
    bundled = os.path.join(_PACKAGE, "_data", "hooks")
    folder = bundled if os.path.isdir(bundled) else os.path.join(os.path.dirname(_PACKAGE), "hooks")
    return os.path.join(folder, "cairn_hook.py")


def run_hook(args: list[str]) -> int:
    """Run hooks/cairn_hook.py with `args`, stdin passed through; 0 whatever happens."""
    script = hook_script_path()
    sys.argv = [script, *args]
    try:
        with open(script, "rb") as handle:
            code = compile(handle.read(), script, "exec")
        # The script answers within its own time budget and ends the process itself (exit 0).
        exec(code, {"__name__": "__main__", "__file__": script})
    except SystemExit:
        pass
    except BaseException as exc:  # a broken install: say so, but never fail the agent's turn
        try:  # noqa: SIM105 - contextlib costs an import on the hot path
            sys.stderr.write(f"cairn hook: cannot run {script}: {type(exc).__name__}: {exc}\n")
        except BaseException:
            pass
    return 0
