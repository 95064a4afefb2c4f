"""`cairn` command line (also `python -m worker`)."""

from __future__ import annotations

import os
import sys

# What a Unix tool exits with when its reader goes away (128 + SIGPIPE).
BROKEN_PIPE_EXIT = 141


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # `cairn hook EVENT` runs on every tool call: skip the CLI's imports and argument tree.
    if args[:1] == ["hook"] and not {"-h", "--help"} & set(args[1:2]):
        from worker.hook_command import run_hook

        return run_hook(args[1:])
    from worker.cli import main as cli_main

    try:
        try:
            return cli_main(args)
        finally:
            sys.stdout.flush()  # here, not at exit, where a closed reader cannot be answered
    except BrokenPipeError:
        # The reader went away (`cairn status | head`): what is left has nowhere to go. Point
        # stdout at /dev/null so the interpreter's flush at exit does not raise again, and exit
        # as any Unix tool would, without a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE_EXIT


if __name__ == "__main__":
    raise SystemExit(main())
