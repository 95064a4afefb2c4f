"""Reading a Claude Code transcript (JSON lines) defensively: what cannot be read is counted.

Claude Code changes its transcript format often, writes the last line while a session runs, and
a line can hold a multi-megabyte tool result. The reader never raises on content: a line that is
too long, not UTF-8, not JSON or not an object is skipped and counted by reason, and a last line
without its newline is left for the next import (the session may still be writing it).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

MAX_LINE_BYTES = 8 * 1024 * 1024  # CAIRN_IMPORT_MAX_LINE_BYTES
CHUNK = 1 << 16

# Skip reasons, as the summary names them.
OVERSIZE = "line too long"
NOT_UTF8 = "not UTF-8"
BAD_JSON = "not JSON"
NOT_OBJECT = "not an object"
TRUNCATED = "unfinished last line"
UNKNOWN_TYPE = "unknown line type"
UNKNOWN_BLOCK = "unknown content block"
NO_SESSION = "no session id"
UNPAIRED = "tool call without a result"


@dataclass
class Skips:
    """Lines (and content blocks) left out, by reason."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, reason: str, n: int = 1) -> None:
        self.counts[reason] += n

    def merge(self, other: Skips) -> None:
        self.counts.update(other.counts)

    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Line:
    """One parsed transcript line: where it starts and ends in the file, and its object."""

    start: int
    end: int
    record: dict[str, Any]


def _skip_rest_of_line(handle: BinaryIO) -> tuple[int, bool]:
    """Read past the end of an over-long line; (bytes read, whether a newline ended it)."""
    consumed = 0
    while True:
        chunk = handle.readline(CHUNK)
        if not chunk:
            return consumed, False
        consumed += len(chunk)
        if chunk.endswith(b"\n"):
            return consumed, True


def parse_line(raw: bytes, skips: Skips) -> dict[str, Any] | None:
    """One complete line's object, or None (counted in `skips`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        skips.add(NOT_UTF8)
        return None
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        skips.add(BAD_JSON)
        return None
    if not isinstance(value, dict):
        skips.add(NOT_OBJECT)
        return None
    return value


def read_lines(
    handle: BinaryIO,
    start: int,
    skips: Skips,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[Line]:
    """Every readable complete line from byte `start` on (skipped ones counted in `skips`)."""
    handle.seek(start)
    offset = start
    while True:
        raw = handle.readline(max_line_bytes + 1)
        if not raw:
            return
        if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
            rest, ended = _skip_rest_of_line(handle)
            if not ended:
                skips.add(TRUNCATED)
                return
            skips.add(OVERSIZE)
            offset += len(raw) + rest
            continue
        if not raw.endswith(b"\n"):
            skips.add(TRUNCATED)  # still being written: read again next time
            return
        end = offset + len(raw)
        record = parse_line(raw, skips)
        if record is not None:
            yield Line(offset, end, record)
        offset = end
