"""The Store: the one owner of the SQLite file. Reads run on a pool, writes are serialised."""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from worker.errors import InsufficientStorage, ServiceUnavailable
from worker.store.migrations import apply_migrations

T = TypeVar("T")
log = logging.getLogger(__name__)

READ_POOL_SIZE = 4


class CorruptDatabase(Exception):
    """The database file failed its integrity check."""


def _translate(exc: sqlite3.Error) -> Exception:
    """Map SQLite failures to HTTP-shaped errors a client can act on."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return ServiceUnavailable(
            "the database is busy (another process holds a write lock); retry shortly"
        )
    if "full" in text or "disk i/o" in text:
        return InsufficientStorage(
            "the disk is full: the database cannot grow; free space and retry"
        )
    if "readonly" in text or "read-only" in text:
        return InsufficientStorage("the database file is read-only; check its permissions")
    return exc


class Store:
    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._writer: sqlite3.Connection | None = None
        self._write_lock = threading.Lock()
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all_readers: list[sqlite3.Connection] = []
        self._reader_limiter: anyio.CapacityLimiter | None = None
        self._writer_limiter: anyio.CapacityLimiter | None = None
        self.recovered_from: Path | None = None
        self._write_listeners: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ lifecycle
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            isolation_level=None,
            check_same_thread=False,
            timeout=self.busy_timeout_ms / 1000,
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        return conn

    def open(self) -> None:
        """Open (creating if needed), check integrity, migrate. A corrupt file is moved aside."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._open_checked()
        except CorruptDatabase as exc:
            self.close()
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
            log.error(
                "database %s failed its integrity check (%s); moved to %s", self.path, exc, target
            )
            self.path.rename(target)
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    side.rename(target.with_name(target.name + suffix))
            self.recovered_from = target
            self._open_checked()

    def _open_checked(self) -> None:
        try:
            conn = self._connect()
            conn.execute("PRAGMA journal_mode = WAL")
            row = conn.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as exc:
            raise CorruptDatabase(str(exc)) from exc
        if row is None or row[0] != "ok":
            conn.close()
            raise CorruptDatabase(str(row[0]) if row else "quick_check returned nothing")
        self._writer = conn
        try:
            apply_migrations(conn)
        except sqlite3.DatabaseError as exc:
            raise CorruptDatabase(str(exc)) from exc

    def close(self) -> None:
        with self._write_lock:
            if self._writer is not None:
                with suppress(sqlite3.Error):
                    self._writer.execute("PRAGMA optimize")
                self._writer.close()
                self._writer = None
        for conn in self._all_readers:
            conn.close()
        self._all_readers.clear()
        self._readers = queue.SimpleQueue()

    def add_write_listener(self, listener: Callable[[], None]) -> None:
        """Called (in the writer thread) after every committed write."""
        self._write_listeners.append(listener)

    # ------------------------------------------------------------------ sync access
    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
            self._all_readers.append(conn)
        try:
            yield conn
        finally:
            self._readers.put(conn)

    def read_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            with self._reader() as conn:
                return fn(conn)
        except sqlite3.OperationalError as exc:
            raise _translate(exc) from exc

    def write_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._write_lock:
            conn = self._writer
            if conn is None:
                raise ServiceUnavailable("the store is closed (the worker is shutting down)")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _translate(exc) from exc
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError):
                    raise _translate(exc) from exc
                raise
        for listener in self._write_listeners:
            listener()
        return result

    # ------------------------------------------------------------------ async access
    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._reader_limiter is None:
            self._reader_limiter = anyio.CapacityLimiter(READ_POOL_SIZE)
        return await anyio.to_thread.run_sync(self.read_sync, fn, limiter=self._reader_limiter)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        # One writer thread slot: writers queue on the event loop instead of blocking threads.
        if self._writer_limiter is None:
            self._writer_limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(self.write_sync, fn, limiter=self._writer_limiter)

    def db_size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                total += side.stat().st_size
        return total
