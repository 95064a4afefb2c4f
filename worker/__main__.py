"""`cairn` command line (also `python -m worker`)."""

from worker.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
