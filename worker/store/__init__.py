"""The Store: the one owner of the SQLite file. Reads run on a pool, writes are serialised.

Async writes go through one writer thread that commits them in groups: every write waiting when
the writer frees up runs in the same transaction, then a single COMMIT; if one of them fails, the
transaction is rolled back and each runs again in its own (so one failing write never undoes
another). While writes arrive concurrently the writer waits `group_commit_delay` for more to
join a group; `write_items` calls of one function in a group run as one call. A write is
acknowledged (its future resolved) only after that COMMIT, so an acknowledged write survives a
crash.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from worker.home import ensure_private_dir, make_private
from worker.store.errors import (
    InvalidValue,
    StoreCorrupt,
    StoreFull,
    StoreLocked,
    StoreUnavailable,
)

if TYPE_CHECKING:
    import asyncio

    import anyio

# anyio, asyncio, the stemmer and the migrations are imported where a
# Store is built or used, not with this package: `cairn doctor` and other CLI commands that only
# import a module of it (integrity, kv) start without them.

T = TypeVar("T")
log = logging.getLogger(__name__)

READ_POOL_SIZE = 4
# Most writes committed in one transaction by the group-commit writer.
GROUP_COMMIT_MAX = 64


def _translate(exc: BaseException) -> BaseException:
    """Map SQLite failures to store errors a caller can act on (worker/store/errors.py)."""
    if isinstance(exc, OverflowError):
        return InvalidValue("a number is out of range (SQLite stores 64-bit integers)")
    if not isinstance(exc, sqlite3.Error):
        return exc
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return StoreLocked(
            "the database is busy (another process holds a write lock); retry shortly"
        )
    if "full" in text:
        return StoreFull("the disk is full: the database cannot grow; free space and retry")
    if "disk i/o" in text:
        return StoreFull(
            "the database file cannot be written (disk I/O error: the disk may be full, "
            "read-only or failing); check it and retry"
        )
    if "readonly" in text or "read-only" in text:
        return StoreFull("the database file is read-only; check its permissions")
    if "malformed" in text or "not a database" in text:
        return StoreCorrupt(
            "the database file is damaged; restart the worker (it moves the file aside)"
        )
    return exc


ItemsFn = Callable[[sqlite3.Connection, list[Any]], list[Any]]


class _WriteJob:
    __slots__ = ("fn", "future", "items", "items_fn", "loop")

    def __init__(
        self,
        fn: Callable[[sqlite3.Connection], Any],
        future: asyncio.Future[Any],
        loop: asyncio.AbstractEventLoop,
        items_fn: ItemsFn | None = None,
        items: list[Any] | None = None,
    ) -> None:
        self.fn = fn
        self.future = future
        self.loop = loop
        # Set for Store.write_items: jobs with the same items_fn may run as one call.
        self.items_fn = items_fn
        self.items = items

    def resolve(self, ok: bool, value: Any) -> None:
        """On the job's event loop: hand the outcome to the waiting caller."""
        if self.future.done():  # the caller went away (cancelled): the write still stands
            return
        if ok:
            self.future.set_result(value)
        else:
            self.future.set_exception(value)

    def settle(self, ok: bool, value: Any) -> None:
        settle_all([(self, ok, value)])


def settle_all(outcomes: list[tuple[_WriteJob, bool, Any]]) -> None:
    """Resolve many jobs with one wake-up per event loop (each wake-up is a syscall)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_WriteJob, bool, Any]]] = {}
    for outcome in outcomes:
        by_loop.setdefault(outcome[0].loop, []).append(outcome)

    def resolve(batch: list[tuple[_WriteJob, bool, Any]]) -> None:
        for job, ok, value in batch:
            job.resolve(ok, value)

    for loop, batch in by_loop.items():
        with suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(resolve, batch)


def _runs(group: list[_WriteJob]) -> Iterator[list[_WriteJob]]:
    """The group split into runs: consecutive write_items jobs of one function, or one job."""
    start = 0
    while start < len(group):
        end = start + 1
        items_fn = group[start].items_fn
        if items_fn is not None:
            while end < len(group) and group[end].items_fn is items_fn:
                end += 1
        yield group[start:end]
        start = end


def _call(conn: sqlite3.Connection, run: list[_WriteJob]) -> list[Any]:
    """Each job's value: one call for a run of write_items jobs, split back per job."""
    if len(run) == 1:
        return [run[0].fn(conn)]
    items_fn = run[0].items_fn
    assert items_fn is not None
    merged = [item for job in run for item in job.items or ()]
    results = items_fn(conn, merged)
    if len(results) != len(merged):
        raise RuntimeError(f"{items_fn!r} returned {len(results)} results for {len(merged)}")
    values: list[Any] = []
    start = 0
    for job in run:
        count = len(job.items or ())
        values.append(results[start : start + count])
        start += count
    return values


class Store:
    backend = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_ms: int = 5000,
        max_db_bytes: int = 0,
        group_commit_delay: float = 0.0,
    ) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.max_db_bytes = max_db_bytes
        # Seconds the writer waits for more writes to join a group, while writes are concurrent.
        self.group_commit_delay = group_commit_delay
        self.groups_delayed = 0
        self._writer: sqlite3.Connection | None = None
        self._write_lock = threading.Lock()
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all_readers: list[sqlite3.Connection] = []
        # close() closes idle readers at once and a busy one when its reader hands it back (closing
        # a connection another thread is using crashes the process); a reader opened before the
        # last close() is never reused.
        self._readers_lock = threading.Lock()
        self._reader_generation = 0
        self._reader_limiter: anyio.CapacityLimiter | None = None
        self._jobs: queue.SimpleQueue[_WriteJob | None] = queue.SimpleQueue()
        self._writer_thread: threading.Thread | None = None
        self._closing = False
        self.groups_committed = 0
        self.writes_committed = 0
        self.recovered_from: Path | None = None

    # ------------------------------------------------------------------ lifecycle
    def _connect(self) -> sqlite3.Connection:
        from worker.store import sql_terms
        from worker.store.db import SqliteDb

        conn = sqlite3.connect(
            self.path,
            isolation_level=None,
            check_same_thread=False,
            timeout=self.busy_timeout_ms / 1000,
            factory=SqliteDb,  # the store's database edge (store/db.py)
        )
        conn.row_factory = sqlite3.Row
        # The keyword index triggers analyse text with this Python function (store/sql_terms.py).
        sql_terms.register(conn)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        return conn

    def open(self) -> None:
        """Open (creating if needed), check integrity, migrate. A corrupt file is moved aside."""
        ensure_private_dir(self.path.parent)
        try:
            self._open_checked()
        except StoreCorrupt as exc:
            self.close()
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
            n = 1
            while target.exists():  # never overwrite an earlier damaged copy
                target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
                n += 1
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
        self._closing = False  # open() after close() (or after moving a damaged file) reopens

    def _open_checked(self) -> None:
        # 0600 before SQLite opens it: its -wal and -shm files (created now and whenever a later
        # connection reopens a checkpointed WAL) take the database file's mode.
        make_private(self.path, create=True)
        for suffix in ("-wal", "-shm"):
            make_private(self.path.with_name(self.path.name + suffix))
        try:
            conn = self._connect()
            conn.execute("PRAGMA journal_mode = WAL")
            row = conn.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreCorrupt(str(exc)) from exc
        if row is None or row[0] != "ok":
            conn.close()
            raise StoreCorrupt(str(row[0]) if row else "quick_check returned nothing")
        self._writer = conn
        from worker.store.migrations import apply_migrations

        try:
            apply_migrations(conn)
        except sqlite3.DatabaseError as exc:
            raise StoreCorrupt(str(exc)) from exc
        if self.max_db_bytes:
            # SQLite then fails writes past the cap with SQLITE_FULL, exactly as on a full disk.
            page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
            conn.execute(f"PRAGMA max_page_count = {max(1, self.max_db_bytes // page_size)}")

    def close(self) -> None:
        """Finish the queued writes, then close every connection."""
        self._closing = True
        thread = self._writer_thread
        if thread is not None:
            self._jobs.put(None)
            thread.join()
            self._writer_thread = None
        with self._write_lock:
            if self._writer is not None:
                with suppress(sqlite3.Error):
                    self._writer.execute("PRAGMA optimize")
                self._writer.close()
                self._writer = None
        with self._readers_lock:
            self._reader_generation += 1
            idle, self._readers = self._readers, queue.SimpleQueue()
            while True:
                try:
                    conn = idle.get_nowait()
                except queue.Empty:
                    break
                conn.close()
                self._all_readers.remove(conn)

    # ------------------------------------------------------------------ sync access
    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        with self._readers_lock:
            generation = self._reader_generation
            try:
                conn = self._readers.get_nowait()
            except queue.Empty:
                conn = None
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
            with self._readers_lock:
                self._all_readers.append(conn)
        try:
            yield conn
        finally:
            with self._readers_lock:
                if self._closing or generation != self._reader_generation:
                    conn.close()
                    self._all_readers.remove(conn)
                else:
                    self._readers.put(conn)

    def leads(self, job: str) -> bool:
        """Always: a SQLite database has one worker (on PostgreSQL, PgStore.leads elects one)."""
        return True

    def add_recovery_listener(self, listener: Callable[[], None]) -> None:
        """Never called: a local file has no outage to recover from (PgStore's breaker does)."""

    def read_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            with self._reader() as conn:
                return fn(conn)
        except (sqlite3.Error, OverflowError) as exc:
            raise _translate(exc) from exc

    def write_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._write_lock:
            conn = self._writer
            if conn is None:
                raise StoreUnavailable("the store is closed (the worker is shutting down)")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _translate(exc) from exc
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                translated = _translate(exc)
                if translated is not exc:
                    raise translated from exc
                raise
        return result

    # ------------------------------------------------------------------ group commit
    def _writer_main(self) -> None:
        stop = False
        last_size = 1
        while not stop:
            job = self._jobs.get()
            if job is None:
                break
            if last_size > 1 and self.group_commit_delay > 0:
                # Writes are arriving concurrently: give the ones being prepared right now a
                # moment to join this transaction (and this insert call). A group's COMMIT
                # and its hand-back to the event loop cost about the same for one write as
                # for several. A lone write (last group of one) never waits.
                self.groups_delayed += 1
                time.sleep(self.group_commit_delay)
            group = [job]
            while len(group) < GROUP_COMMIT_MAX:
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                group.append(more)
            last_size = len(group)
            try:
                self._commit_group(group)
            except BaseException as exc:  # never leave a caller waiting forever
                log.exception("writer failed")
                for item in group:
                    item.settle(False, StoreUnavailable(f"write failed: {exc}"))

    def _commit_group(self, group: list[_WriteJob]) -> None:
        with self._write_lock:
            conn = self._writer
            if conn is None:
                closed = StoreUnavailable("the store is closed (the worker is shutting down)")
                outcomes: list[tuple[bool, Any]] = [(False, closed)] * len(group)
            else:
                together = self._run_together(conn, group)
                outcomes = together if together is not None else self._run_alone(conn, group)
        committed = sum(1 for ok, _ in outcomes if ok)
        self.writes_committed += committed
        settle_all([(job, ok, value) for job, (ok, value) in zip(group, outcomes, strict=True)])

    def _run_together(
        self, conn: sqlite3.Connection, group: list[_WriteJob]
    ) -> list[tuple[bool, Any]] | None:
        """All jobs in one transaction, no savepoints (FTS5 flushes its pending terms to a new
        segment at every SAVEPOINT, which made one write in a group cost two). None if a job of
        a group of several failed: the transaction is rolled back and each job runs again alone,
        so a failing write never undoes another (a job's fn acts only through `conn`)."""
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            return [(False, _translate(exc))] * len(group)
        values: list[Any] = []
        for run in _runs(group):
            try:
                values.extend(_call(conn, run))
            except BaseException as exc:
                if conn.in_transaction:
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if len(group) == 1:
                    return [(False, _translate(exc))]
                return None
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            return [(False, _translate(exc))] * len(group)
        self.groups_committed += 1
        return [(True, value) for value in values]

    def _run_alone(
        self, conn: sqlite3.Connection, group: list[_WriteJob]
    ) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any]] = []
        for job in group:
            alone = self._run_together(conn, [job])
            assert alone is not None  # a group of one reports its own failure
            outcomes.extend(alone)
        return outcomes

    # ------------------------------------------------------------------ async access
    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        import anyio.to_thread

        if self._reader_limiter is None:
            self._reader_limiter = anyio.CapacityLimiter(READ_POOL_SIZE)
        return await anyio.to_thread.run_sync(self.read_sync, fn, limiter=self._reader_limiter)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` in a write transaction (group-committed); its result once durable."""
        result: T = await self._submit(fn)
        return result

    async def write_items(self, fn: ItemsFn, items: list[Any]) -> list[Any]:
        """Like write() for work over a list of items that returns one result per item, in
        order: queued calls of the same `fn` that the writer takes together run as one call
        over all their items (in queue order), so concurrent small writes share its
        statements (one lookup, one index insert...) as well as the COMMIT. `fn` must not
        depend on how its items are split into calls."""
        own = list(items)
        results: list[Any] = await self._submit(lambda conn: fn(conn, own), fn, own)
        return results

    async def _submit(
        self,
        fn: Callable[[sqlite3.Connection], Any],
        items_fn: ItemsFn | None = None,
        items: list[Any] | None = None,
    ) -> Any:
        """Queue a job for the writer thread (started on first use); its value once durable."""
        if self._closing or self._writer is None:
            raise StoreUnavailable("the store is closed (the worker is shutting down)")
        if self._writer_thread is None:
            self._writer_thread = threading.Thread(
                target=self._writer_main, name="cairn-store-writer", daemon=True
            )
            self._writer_thread.start()
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._jobs.put(_WriteJob(fn, future, loop, items_fn, items))
        return await future

    def corrupt_copies(self) -> list[Path]:
        """Damaged database files moved aside at start (oldest first), kept until the user acts."""
        pattern = self.path.name + ".corrupt-*"
        return sorted(
            p for p in self.path.parent.glob(pattern) if not p.name.endswith(("-wal", "-shm"))
        )

    @property
    def where(self) -> str:
        return str(self.path)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "where": self.where}

    def db_size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                total += side.stat().st_size
        return total
