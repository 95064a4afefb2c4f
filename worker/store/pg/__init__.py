"""PgStore: the store over a PostgreSQL database a team shares (the counterpart of Store).

Reads run in read-only transactions on pooled connections. Writes are serialised like SQLite's
`BEGIN IMMEDIATE`: one at a time in this worker (a lock), and one at a time across every worker
of the database (`pg_advisory_xact_lock`, released at COMMIT or ROLLBACK), so the store modules'
read-then-write steps (same content merges, dedupe by event id) see no concurrent writer, as on
SQLite. A write is acknowledged only after its COMMIT; a connection lost mid-write raises
StoreUnavailable: lost before COMMIT, nothing of the write is kept; lost during COMMIT, it may
have been kept, and the client's retry with the same event id is deduplicated.

A database that does not answer opens the pool's circuit breaker (pg/breaker.py): until a check
finds it answering again, every read and write is refused at once with StoreUnavailable (503),
so a hook spools its event at once instead of waiting out its budget.

Every store module runs here (docs/team.md). psycopg is imported where a PgStore is
opened.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from worker.store.errors import InvalidValue, StoreFull, StoreUnavailable
from worker.team import redact

if TYPE_CHECKING:
    import anyio

    from worker.store.pg.connection import PgDb, PgPool
    from worker.store.pg.leader import Leadership

T = TypeVar("T")
log = logging.getLogger(__name__)

READ_POOL_SIZE = 4
# How keywords are searched on a team database (migration 6, retrieval/db_keywords.py): status.
KEYWORD_SEARCH = "database (GIN index of the analysed terms, BM25 from kept counts)"
# pg_advisory_xact_lock key serialising every worker's writes (see the module docstring).
WRITE_LOCK = 0x636169726E_0002  # "cairn", 2


class PgStore:
    backend = "postgres"
    # SQLite moves a damaged file aside at start; a PostgreSQL server keeps its own data.
    recovered_from: Path | None = None

    def __init__(self, url: str, *, pool_size: int = READ_POOL_SIZE + 1) -> None:
        self._url = url  # never logged: `where` is the printable form
        self.where = redact(url)
        self.pool_size = pool_size
        self._pool: PgPool | None = None
        self._leadership: Leadership | None = None
        self._write_lock = threading.Lock()
        self._reader_limiter: anyio.CapacityLimiter | None = None
        self._write_listeners: list[Callable[[], None]] = []
        self.native_vectors = False
        # How memory vectors are searched (pgvector in the database, or the worker): for status.
        self.vector_search = ""
        self.migrations_applied: list[int] = []

    def __repr__(self) -> str:
        return f"PgStore({self.where})"

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        """Connect, migrate (under an advisory lock), and use pgvector where it exists."""
        from worker.store.pg import vectors
        from worker.store.pg.connection import PgPool
        from worker.store.pg.migrations import apply_migrations

        pool = PgPool(self._url, self.pool_size)
        try:
            with pool.connection() as conn:
                self.migrations_applied = self._guard(lambda: apply_migrations(conn, self.where))
                self.native_vectors, self.vector_search = self._guard(lambda: vectors.enable(conn))
                if self.native_vectors:
                    pool.session_sql = self._guard(lambda: vectors.session_settings(conn))
                    # This connection was made before: it takes them now.
                    self._guard(lambda: [conn.execute(sql) for sql in pool.session_sql])
        except BaseException:
            pool.close()
            raise
        from worker.store.pg.leader import Leadership

        self._pool = pool
        pool.breaker.start()
        self._leadership = Leadership(self._url)
        log.info("team database %s open; vectors: %s", self.where, self.vector_search)

    def close(self) -> None:
        leadership, self._leadership = self._leadership, None
        if leadership is not None:
            leadership.close()  # first: another worker may lead while this one finishes closing
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def leads(self, job: str) -> bool:
        """True while this worker leads the team's periodic `job` (pg/leader.py): blocking."""
        leadership = self._leadership
        if leadership is None:
            raise StoreUnavailable("the store is closed (the worker is shutting down)")
        self._live_pool().breaker.check()
        return leadership.leads(job)

    def add_write_listener(self, listener: Callable[[], None]) -> None:
        """Called after every committed write (in the writing thread)."""
        self._write_listeners.append(listener)

    def add_recovery_listener(self, listener: Callable[[], None]) -> None:
        """Called (in the breaker's thread) when the database answers again after an outage."""
        self._live_pool().breaker.recovery_listeners.append(listener)

    # ------------------------------------------------------------------ sync access
    def _live_pool(self) -> PgPool:
        if self._pool is None:
            raise StoreUnavailable("the store is closed (the worker is shutting down)")
        return self._pool

    def _db(self, conn: Any) -> PgDb:
        from worker.store.pg.connection import PgDb

        return PgDb(conn, native_vectors=self.native_vectors)

    def read_sync(self, fn: Callable[[PgDb], T]) -> T:
        def run() -> T:
            with self._live_pool().connection() as conn:
                # `BEGIN READ ONLY`, one round trip (not BEGIN, then SET TRANSACTION READ ONLY):
                # psycopg keeps the attribute on our side and writes it into the BEGIN.
                conn.read_only = True
                with conn.transaction():
                    return fn(self._db(conn))

        return self._guard(run)

    def write_sync(self, fn: Callable[[PgDb], T]) -> T:
        def run() -> T:
            with self._live_pool().connection(writing=True) as conn:
                conn.read_only = False  # the pool's connections serve reads too
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                    return fn(self._db(conn))

        # Waiting behind a write stuck on a silent database ends when the breaker opens.
        self._live_pool().breaker.acquire(self._write_lock, writing=True)
        try:
            result = self._guard(run, writing=True)
        finally:
            self._write_lock.release()
        for listener in self._write_listeners:
            try:
                listener()
            except Exception:
                log.exception("write listener failed")
        return result

    def _guard(self, run: Callable[[], T], *, writing: bool = False) -> T:
        """`run()`, its database errors as errors a client can act on (password never shown)."""
        import psycopg

        from worker.team import safe_message

        try:
            return run()
        except psycopg.Error as exc:
            text = safe_message(str(exc).strip(), self._url)
            raise self._translate(exc, text, writing=writing) from None

    def _translate(self, exc: Exception, text: str, *, writing: bool) -> Exception:
        import psycopg

        if isinstance(exc, psycopg.errors.NumericValueOutOfRange):
            return InvalidValue("a number is out of range (the database stores 64-bit integers)")
        if isinstance(exc, psycopg.errors.DiskFull | psycopg.errors.OutOfMemory):
            return StoreFull(f"the team database {self.where} is out of space: {text}")
        if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
            return StoreFull(f"the team database {self.where} is read-only: {text}")
        if isinstance(exc, psycopg.OperationalError):
            # A read says only that: a write's client also learns that retrying it is safe.
            retry = " (a write was not acknowledged; retrying it with its event id is safe)"
            return StoreUnavailable(
                f"the team database {self.where} is unreachable or the connection was lost"
                f"{retry if writing else ''}: {text}"
            )
        # Anything else is a defect (a query the database rejects): say what, without secrets.
        return RuntimeError(f"team database error ({type(exc).__name__}): {text}")

    # ------------------------------------------------------------------ async access
    async def read(self, fn: Callable[[PgDb], T]) -> T:
        import anyio
        import anyio.to_thread

        self._live_pool().breaker.check()  # not queued behind readers stuck on a silent database
        if self._reader_limiter is None:
            self._reader_limiter = anyio.CapacityLimiter(READ_POOL_SIZE)
        return await anyio.to_thread.run_sync(self.read_sync, fn, limiter=self._reader_limiter)

    async def write(self, fn: Callable[[PgDb], T]) -> T:
        """Run `fn(db)` in a write transaction; its result once committed."""
        import anyio.to_thread

        self._live_pool().breaker.check(writing=True)
        return await anyio.to_thread.run_sync(self.write_sync, fn)

    async def write_items(
        self, fn: Callable[[PgDb, list[Any]], list[Any]], items: list[Any]
    ) -> list[Any]:
        """Like `Store.write_items`: one result per item, in order (one call, one transaction)."""
        own = list(items)
        return await self.write(lambda db: fn(db, own))

    # ------------------------------------------------------------------ status
    def corrupt_copies(self) -> list[Path]:
        return []  # the server keeps its own files: nothing of it is moved aside here

    def db_size_bytes(self) -> int:
        """The team database's size on its server (every team's rows, not this worker's)."""
        row = self.read_sync(
            lambda db: db.execute("SELECT pg_database_size(current_database())").fetchone()
        )
        return int(row[0]) if row is not None else 0

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "where": self.where,
            "vector_search": self.vector_search,
            "keyword_search": KEYWORD_SEARCH,
            "breaker": self._pool.breaker.status() if self._pool is not None else None,
        }
