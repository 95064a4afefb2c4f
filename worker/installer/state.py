"""$CAIRN_HOME/install.json: the interpreter the hook uses to start the worker, and what we wrote.

{"python": ..., "hook": ..., "version": ..., "installed_at": ...,
 "files": {"/abs/path": {"kind": ..., "created": bool, "blank": str?, "keep_empty": [[...]],
                         "created_dirs": [...]}}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from worker.home import ensure_home
from worker.installer.jsonfile import atomic_write

STATE_FILE = "install.json"


def state_path(home: Path) -> Path:
    return home / STATE_FILE


def read_state(home: Path) -> dict[str, Any]:
    try:
        data = json.loads(state_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_state(home: Path, state: dict[str, Any]) -> None:
    ensure_home(home)
    atomic_write(
        state_path(home), json.dumps(state, indent=2, sort_keys=True) + "\n", default_mode=0o600
    )


def file_records(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    files = state.get("files")
    if not isinstance(files, dict):
        files = state["files"] = {}
    return files
