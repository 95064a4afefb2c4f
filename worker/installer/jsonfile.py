"""Config files we share with other programs: strict parse, change preview, backup, atomic write.

A file is only rewritten when its parsed content changes, and then only the values that changed
(worker/installer/jsonedit.py): the rest keeps its bytes, so install+uninstall gives back the
file exactly, whatever its layout. render_like serialises a file that had no content yet.
"""

from __future__ import annotations

import contextlib
import difflib
import glob
import json
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class InstallError(Exception):
    """A config file we must not touch (invalid JSON, wrong shape) or cannot write."""


@dataclass(frozen=True)
class TextFile:
    """A file as found on disk: `text` is None when the file does not exist."""

    path: Path
    text: str | None

    @property
    def exists(self) -> bool:
        return self.text is not None


def real_path(path: Path) -> Path:
    """Follow symlinks (dotfile managers) so the write replaces the target, not the link."""
    try:
        return path.resolve(strict=True) if path.is_symlink() else path
    except OSError:
        return path


def read_text(path: Path) -> TextFile:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return TextFile(path, None)
    except IsADirectoryError:
        raise InstallError(f"{path} is a directory, expected a JSON file") from None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return TextFile(
            path, raw.decode("utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8")
        )
    except UnicodeDecodeError as exc:
        raise InstallError(f"{path} is not UTF-8 text (byte {exc.start}); left untouched") from None


def parse_object(file: TextFile) -> dict[str, Any]:
    """The top-level JSON object; a missing or blank file is an empty object."""
    if file.text is None or not file.text.strip():
        return {}
    try:
        data = json.loads(file.text)
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{file.path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "it was left untouched: fix or move it, then run the command again"
        ) from None
    if not isinstance(data, dict):
        raise InstallError(
            f"{file.path} holds a JSON {type(data).__name__}, expected an object; left untouched"
        )
    return data


_INDENT = re.compile(r"^[\[{][^\n]*\n([ \t]+)\S", re.S)


def render_like(data: dict[str, Any], original: str | None) -> str:
    """Serialise `data` in the original file's indentation, with its trailing-newline habit."""
    indent: str | int = 2
    if original:
        match = _INDENT.match(original.lstrip("\ufeff"))
        if match:
            indent = match.group(1)
            indent = len(indent) if set(indent) == {" "} else indent
    # A file that escapes non-ASCII (\u00e4) keeps doing so; one with raw UTF-8 keeps that.
    ascii_only = original is not None and original.strip() != "" and original.isascii()
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    if original is None or original.endswith("\n") or not original.strip():
        text += "\n"
    return text


def unified_diff(path: Path, old: str | None, new: str | None) -> str:
    before = (old or "").splitlines(keepends=True)
    after = (new or "").splitlines(keepends=True)
    label_old = str(path) if old is not None else "/dev/null"
    label_new = str(path) if new is not None else "/dev/null"
    lines = difflib.unified_diff(before, after, label_old, label_new, n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


BACKUPS_KEPT = 3  # per file: every install or uninstall that changes it would add one


def backups_of(path: Path) -> list[Path]:
    """`path`'s backups, oldest first."""
    found = path.parent.glob(glob.escape(path.name) + ".cairn-backup-*")
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))


def backup(path: Path, keep: int = BACKUPS_KEPT) -> Path:
    """Copy `path` to `<name>.cairn-backup-<UTC stamp>` beside it (same mode); returns the copy.

    A backup with the same bytes is reused (made the newest) rather than copied again, and only
    the newest `keep` stay, so install/uninstall cycles do not pile files up beside the config.
    """
    data = path.read_bytes()
    existing = backups_of(path)
    same = next((b for b in reversed(existing) if b.read_bytes() == data), None)
    if same is not None:
        os.utime(same)
        target = same
    else:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = path.with_name(f"{path.name}.cairn-backup-{stamp}")
        counter = 1
        while target.exists():
            counter += 1
            target = path.with_name(f"{path.name}.cairn-backup-{stamp}-{counter}")
        mode = stat.S_IMODE(path.stat().st_mode)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    total = len(existing) + (same is None)
    for old in [b for b in existing if b != target][: max(0, total - keep)]:
        with contextlib.suppress(OSError):
            old.unlink()
    return target


def _starts_with_bom(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(3) == b"\xef\xbb\xbf"
    except OSError:
        return False


def atomic_write(path: Path, text: str, *, default_mode: int = 0o644) -> None:
    """Write via a temp file in the same folder + fsync + rename; keeps an existing file's mode
    and its UTF-8 byte-order mark (read_text drops it from the text the editors see)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = default_mode
    if _starts_with_bom(path) and not text.startswith("\ufeff"):
        text = "\ufeff" + text
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
