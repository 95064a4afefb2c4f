"""How much Claude Code history is waiting to be imported, counted without parsing it.

`cairn install` asks "found N sessions in M projects, ~E events; import now?" before the user has
waited for anything, so the count only lists files and counts the user lines in them (a prompt
or a tool result each: one stored event each, give or take the CLI's own meta lines). Sessions
the import state says were read in full are not counted again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from worker.imports.claude_code import discover
from worker.imports.state import ImportState

# As the CLI writes it (JSON.stringify: no spaces), and as Python's json.dumps would.
USER_LINES = (b'"type":"user"', b'"type": "user"')
CHUNK = 1 << 20


@dataclass(frozen=True)
class History:
    sessions: int
    projects: int
    events: int
    bytes: int

    def line(self) -> str:
        return (
            f"found {self.sessions:,} Claude Code session{'s' * (self.sessions != 1)} in "
            f"{self.projects:,} project{'s' * (self.projects != 1)}, ~{self.events:,} events"
        )


def transcript_folder(path: Path) -> str:
    """The folder name Claude Code gives a working directory's transcripts."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def user_lines(path: Path, start: int = 0) -> int:
    """User lines in a transcript past `start`, read in chunks (memory stays flat)."""
    count = 0
    tail = b""
    keep = max(map(len, USER_LINES)) - 1
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            while chunk := handle.read(CHUNK):
                block = tail + chunk
                # Counted in the block, less what the carried tail alone held (counted before).
                count += sum(block.count(p) - tail.count(p) for p in USER_LINES)
                tail = block[-keep:]
    except OSError:
        return 0
    return count


def count_history(root: Path, state: ImportState, project: Path | None = None) -> History:
    """Sessions under `root` with something not imported yet (only `project`'s and its
    subfolders' when given), the project folders they are in, and their events, roughly."""
    prefix = transcript_folder(project) if project is not None else None
    sessions = 0
    folders: set[Path] = set()
    events = 0
    size = 0
    for session in discover(root):
        name = session.project_dir.name
        if prefix is not None and name != prefix and not name.startswith(prefix + "-"):
            continue
        fresh = False
        for path in session.paths():
            try:
                st = path.stat()
            except OSError:
                continue
            if state.unchanged(path, st):
                continue
            fresh = True
            events += user_lines(path, state.offset(path))
            size += st.st_size
        if fresh:
            sessions += 1
            folders.add(session.project_dir)
    return History(sessions, len(folders), events, size)
