"""`cairn` command line (also `python -m worker`)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # `cairn hook EVENT` runs on every tool call: skip the CLI's imports and argument tree.
    if args[:1] == ["hook"] and not {"-h", "--help"} & set(args[1:2]):
        from worker.hook_command import run_hook

        return run_hook(args[1:])
    from worker.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
