"""The private home: $CAIRN_HOME and its folders 0700, the files in it 0600.

Every memory sits in $CAIRN_HOME, so everything that creates the home or a file in it goes
through here (the stdlib-only hooks keep a copy of `ensure_home` in hooks/cairn_hook_io.py).
Temporary files get unpredictable names (O_EXCL), so a link planted at a guessable path is never
followed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def ensure_private_dir(path: Path) -> Path:
    """Create `path` 0700, or tighten it (with a log line) if other users could read it. Its
    parents are the user's: missing ones are created as `mkdir -p` would."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        os.chmod(path, PRIVATE_DIR)
        log.warning("%s had mode %04o (other users could read it); tightened to 0700", path, mode)
    return path


def ensure_home(home: Path, *folders: Path) -> Path:
    """The home 0700, then each of `folders` (inside it) 0700."""
    ensure_private_dir(home)
    for folder in folders:
        ensure_private_dir(folder)
    return home


# Folders inside the home made by others than the worker's own code: the hooks' bytecode
# (Python creates it 0755 under sys.pycache_prefix) and the models folder (assembled with mkdir).
SHARED_FOLDERS = ("cache", "models")


def home_folders(home: Path) -> list[Path]:
    """The folders inside the home that the worker makes private at every start."""
    return [home / name for name in SHARED_FOLDERS]


def make_private(path: Path, *, create: bool = False) -> None:
    """Tighten an existing file to 0600; a missing one is created empty 0600 if `create`.

    SQLite gives a database's -wal, -shm and journal files the database file's own mode, so a
    database created here (an empty file is an empty database) keeps all of them private.
    """
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        if create:
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        return
    if mode & 0o077:
        os.chmod(path, PRIVATE_FILE)
        log.warning("%s had mode %04o; tightened to 0600", path, mode)


def private_opener(path: str, flags: int) -> int:
    """`open(..., opener=private_opener)`: a file created by it is 0600 whatever the umask."""
    return os.open(path, flags, PRIVATE_FILE)


@contextlib.contextmanager
def private_temp(target: Path) -> Iterator[IO[str]]:
    """A 0600 temp file beside `target` with an unpredictable name (mkstemp: O_EXCL, never a
    planted link); on success it replaces `target`, on failure it is removed."""
    import tempfile  # (random, shutil...: not for the CLI commands that never write one)

    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
