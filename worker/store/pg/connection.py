"""PostgreSQL connections for the store: the `Db` over psycopg 3, its rows, and a small pool.

Query modules write `?` placeholders once (see store/db.py); `to_psycopg` turns them into
psycopg's `%s` (and a literal `%` into `%%`), outside string literals. PostgreSQL's jsonb `?`
operators cannot be written through it: use `jsonb_exists()` and friends.

The connection string is a secret (it may hold a password): it is never logged, and every error
raised from here has the password cut out (`safe_message`).
"""

from __future__ import annotations

import math
import queue
import select
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

from worker.store.db import POSTGRES, Dialect
from worker.store.errors import StoreUnavailable
from worker.store.pg.breaker import Breaker
from worker.team import redact, safe_message

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import RowMaker

CONNECT_TIMEOUT_S = 10


@lru_cache(maxsize=4096)
def to_psycopg(sql: str) -> str:
    """`sql` with `?` placeholders as psycopg's `%s` (literal `%` doubled), quotes respected."""
    if "?" not in sql and "%" not in sql:
        return sql
    # Splitting on `'` leaves the text outside string literals at even indexes (a doubled `''`
    # inside a literal splits into an empty piece, which keeps the parity).
    pieces = sql.split("'")
    for i, piece in enumerate(pieces):
        piece = piece.replace("%", "%%")
        pieces[i] = piece.replace("?", "%s") if i % 2 == 0 else piece
    return "'".join(pieces)


class PgRow:
    """A row readable by position and by column name, like sqlite3.Row."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: dict[str, int], values: Sequence[Any]) -> None:
        self._names = names
        self._values = values

    def __getitem__(self, key: int | str, /) -> Any:
        if isinstance(key, str):
            return self._values[self._names[key]]
        return self._values[key]

    def keys(self) -> list[str]:
        return list(self._names)

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._names, self._values, strict=True))!r})"


def pg_row(cursor: psycopg.Cursor[Any]) -> RowMaker[PgRow]:
    """psycopg row factory: PgRow objects sharing one name index per result."""
    names = {column.name: i for i, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(names, values)

    return make


class PgDb:
    """One pooled psycopg connection as a `Db` (store/db.py), inside a store's transaction."""

    dialect: ClassVar[Dialect] = POSTGRES

    def __init__(self, conn: psycopg.Connection[PgRow], *, native_vectors: bool) -> None:
        self.conn = conn
        # pgvector is installed in the database: vectors are searched there (HNSW, cosine).
        self.native_vectors = native_vectors

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> psycopg.Cursor[PgRow]:
        # Parameters always passed (even none): psycopg reads `%%` as `%` only then.
        return self.conn.execute(to_psycopg(sql), tuple(parameters))

    def executemany(
        self, sql: str, parameters: Iterable[Sequence[Any]], /
    ) -> psycopg.Cursor[PgRow]:
        cursor = self.conn.cursor()
        cursor.executemany(to_psycopg(sql), [tuple(p) for p in parameters])
        return cursor

    def insert(self, sql: str, parameters: Sequence[Any]) -> int:
        row = self.execute(f"{sql} RETURNING id", parameters).fetchone()
        assert row is not None
        return int(row[0])

    def tuples(self, sql: str, parameters: Sequence[Any] = (), /) -> list[tuple[Any, ...]]:
        from psycopg.rows import tuple_row

        cursor = self.conn.cursor(row_factory=tuple_row)
        return cursor.execute(to_psycopg(sql), tuple(parameters)).fetchall()


def ended_by_server(conn: psycopg.Connection[PgRow]) -> bool:
    """Whether an idle connection was ended by the server, without a round trip.

    Between units of work the server sends nothing on a pooled connection (none LISTENs), so
    anything to read (the FATAL "terminating connection" of a shutdown or pg_terminate_backend)
    or a hang-up means it is gone. A peer that vanished silently is not seen here: its unit of
    work fails, and is not acknowledged.
    """
    import psycopg

    if conn.closed or conn.broken:
        return True
    try:
        fd = conn.fileno()
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([fd], [], [], 0)
        return bool(readable)
    except (psycopg.Error, OSError, ValueError):
        return True


class PgPool:
    """At most `size` connections, reused; one that broke in use, or that the server ended while
    it was idle, is closed and replaced.

    (psycopg_pool would do: this is the few lines the store needs, with no new dependency.)
    """

    def __init__(self, url: str, size: int, *, wait_s: float = 30.0) -> None:
        self.url = url
        self.size = size
        self.wait_s = wait_s
        self._idle: queue.SimpleQueue[psycopg.Connection[PgRow]] = queue.SimpleQueue()
        self._slots = threading.BoundedSemaphore(size)
        self._all: set[psycopg.Connection[PgRow]] = set()
        self._lock = threading.Lock()
        self.closed = False
        # Statements each new connection runs once (settings that depend on the database).
        self.session_sql: list[str] = []
        # Refuses units of work at once while the database does not answer (pg/breaker.py).
        self.breaker = Breaker(redact(url), self.probe, self.drop_idle)

    def _connect(self) -> psycopg.Connection[PgRow]:
        import psycopg

        started = time.monotonic()
        try:
            conn = psycopg.connect(
                self.url,
                autocommit=True,  # transactions are opened explicitly by the store
                row_factory=pg_row,
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name="cairn",
            )
        except psycopg.Error as exc:
            text = safe_message(str(exc).strip(), self.url)
            self.breaker.connect_failed(text, waited_s=time.monotonic() - started)
            raise StoreUnavailable(
                f"the team database {redact(self.url)} is unreachable: {text}"
            ) from None
        for statement in self.session_sql:
            conn.execute(statement)
        with self._lock:
            self._all.add(conn)
        return conn

    def probe(self, timeout_s: float) -> None:
        """One fresh connection answering `SELECT 1` (the breaker's check), or an error."""
        import psycopg

        # libpq waits at least 2 s for a connection; the breaker waits `timeout_s` for this.
        # Data unacknowledged that long ends it too, so a check stuck on a host that drops
        # packets never outlives the outage.
        wait_s = max(2, math.ceil(timeout_s))
        with psycopg.connect(
            self.url,
            autocommit=True,
            connect_timeout=wait_s,
            tcp_user_timeout=wait_s * 1000,
            application_name="cairn",
        ) as conn:
            conn.execute("SELECT 1")

    @contextmanager
    def connection(self, *, writing: bool = False) -> Iterator[psycopg.Connection[PgRow]]:
        """A connection for one unit of work; returned to the pool after unless it broke."""
        import psycopg
        from psycopg.pq import TransactionStatus

        if self.closed:
            raise StoreUnavailable("the store is closed (the worker is shutting down)")
        if not self.breaker.acquire(self._slots, timeout=self.wait_s, writing=writing):
            raise StoreUnavailable("every team database connection is busy; retry shortly")
        try:
            with self.breaker.unit() as unit:
                conn = self._take_idle() or self._connect()
                unit.conn = conn
                try:
                    yield conn
                except psycopg.OperationalError:
                    self.breaker.lost()
                    raise
                finally:
                    # Kept after a failed unit of work too, once its transaction is rolled back.
                    if (
                        not self.closed
                        and not conn.closed
                        and not conn.broken
                        and conn.info.transaction_status == TransactionStatus.IDLE
                    ):
                        self._idle.put(conn)
                    else:
                        self._discard(conn)
        finally:
            self._slots.release()

    def _take_idle(self) -> psycopg.Connection[PgRow] | None:
        """An idle connection the server has not ended meanwhile, if any (the dead discarded):
        after a server restart the next unit of work connects anew instead of failing on one."""
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return None
            if ended_by_server(conn):
                self._discard(conn)
            else:
                return conn

    def drop_idle(self) -> None:
        """Close every idle connection (the database went silent: none can be trusted)."""
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return
            self._discard(conn)

    def _discard(self, conn: psycopg.Connection[PgRow]) -> None:
        with self._lock:
            self._all.discard(conn)
        conn.close()

    def close(self) -> None:
        self.closed = True
        self.breaker.stop()
        with self._lock:
            conns, self._all = list(self._all), set()
        for conn in conns:
            conn.close()
