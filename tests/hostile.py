"""A project with its own `worker/` package, as many repositories have: Cairn must never run it."""

from __future__ import annotations

from pathlib import Path

MARKER = "HOSTILE-WORKER-RAN"


def hostile_project(root: Path) -> Path:
    """Create `root/worker/` whose `__init__` and `__main__` append to a marker file, and return
    that marker's path (it must not exist after Cairn ran from `root`)."""
    package = root / "worker"
    package.mkdir(parents=True)
    marker = root / MARKER
    code = (
        "import sys\n"
        f"with open({str(marker)!r}, 'a') as handle:\n"
        "    handle.write(__name__ + ' ' + ' '.join(sys.argv) + '\\n')\n"
    )
    (package / "__init__.py").write_text(code)
    (package / "__main__.py").write_text(code)
    return marker
