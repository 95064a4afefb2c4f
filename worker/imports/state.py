"""What an import has already taken from each transcript ($CAIRN_HOME/imports/<source>.json).

Per file: its size and modification time when last read, and where its last complete line
ended. An unchanged file is skipped; a grown one is read again from the start (the task plan and
tool pairing need the earlier lines) but only events completed past that offset are sent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.home import private_temp

VERSION = 1


@dataclass(frozen=True)
class FileMark:
    size: int
    mtime_ns: int
    offset: int


class ImportState:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: dict[str, FileMark] = {}

    @classmethod
    def load(cls, path: Path) -> ImportState:
        state = cls(path)
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return state  # none yet, or damaged: the event ids still keep a re-import exact
        files = data.get("files") if isinstance(data, dict) else None
        if isinstance(files, dict):
            for name, mark in files.items():
                try:
                    state.files[str(name)] = FileMark(
                        int(mark["size"]), int(mark["mtime_ns"]), int(mark["offset"])
                    )
                except (KeyError, TypeError, ValueError):
                    continue
        return state

    def unchanged(self, path: Path, st: os.stat_result) -> bool:
        mark = self.files.get(str(path))
        return mark is not None and mark.size == st.st_size and mark.mtime_ns == st.st_mtime_ns

    def offset(self, path: Path) -> int:
        mark = self.files.get(str(path))
        return mark.offset if mark is not None else 0

    def mark(self, path: Path, mark: FileMark) -> None:
        self.files[str(path)] = mark

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {
            "version": VERSION,
            "files": {
                name: {"size": m.size, "mtime_ns": m.mtime_ns, "offset": m.offset}
                for name, m in sorted(self.files.items())
            },
        }
        with private_temp(self.path) as handle:
            handle.write(json.dumps(data, indent=1) + "\n")
