"""Cairn's Claude Code hook: `python cairn_hook.py <event>` with the hook's JSON on stdin.

Events: session-start, user-prompt-submit, post-tool-use, post-tool-use-failure, stop,
subagent-stop, pre-compact, session-end (or the CamelCase names). Stdlib only; imports nothing
from `worker`. It always exits 0, prints only context it means to inject, logs problems to
$CAIRN_HOME/logs/hooks.log, and spools what the worker cannot take now.
"""

import os
import sys


def main() -> None:
    out = ""
    try:
        # This runs on every tool call: keep the modules' bytecode under $CAIRN_HOME/cache even
        # where the install folder is read-only or PYTHONDONTWRITEBYTECODE is set.
        home = os.environ.get("CAIRN_HOME") or os.path.join(os.path.expanduser("~"), ".cairn")
        home = os.path.expanduser(home)
        for folder in (home, os.path.join(home, "cache")):  # private, before Python makes them
            try:  # noqa: SIM105 (contextlib would be one more import on every tool call)
                os.mkdir(folder, 0o700)
            except OSError:
                pass  # there already (the worker keeps it 0700), or unwritable: Python copes
        sys.pycache_prefix = os.path.join(home, "cache", "pycache")
        sys.dont_write_bytecode = False
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from cairn_hook_run import run

        out = run(sys.argv[1:])
    except BaseException as exc:  # never a traceback, never a non-zero exit
        try:
            from cairn_hook_io import cairn_home, log

            log(cairn_home(), f"hook failed: {type(exc).__name__}: {exc}")
        except BaseException:
            pass
    try:
        if out:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
    except BaseException:
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
