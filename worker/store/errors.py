"""What the store refuses, in its own terms; `worker/app.py` maps each kind to an HTTP status."""

from __future__ import annotations


class StoreError(Exception):
    """A failure of the store a caller can act on, with a message fit to show a user."""

    def __init__(self, message: str, *, field: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.line = line  # the line of an import the error is about


class InvalidValue(StoreError):
    """A value the store cannot hold (a number past 64 bits), or a malformed import line."""


class RowConflict(StoreError):
    """An imported row clashes with a stored one."""


class StoreFull(StoreError):
    """The database cannot grow or be written: a full disk, its size cap, read-only, I/O error."""


class StoreLocked(StoreError):
    """Another process holds the write lock past the busy timeout."""


class StoreUnavailable(StoreError):
    """The store takes no writes now: it is closed (the worker is stopping) or its writer failed."""


class StoreCorrupt(StoreError):
    """The database file is damaged (at open it is moved aside; later, a restart does that)."""
