"""Which worker of a team leads a periodic job (the decay pass: expiry, caps, compression).

Every worker of a team database runs the same scheduler; a job whose work is the whole team's
(archiving what a project holds over its cap, say) should run once per interval, not once per
worker. The leader of job X is the worker holding X's session advisory lock
(`pg_try_advisory_lock`) on a connection of its own, kept open outside the pool: leadership ends
when that connection ends, so when the worker stops, crashes or loses the database, and another
worker takes the job at its next tick. A worker asks before each run (`leads`); the answer is
checked against the live connection, never remembered alone.

A connection that dies silently (a network partition) keeps its lock until the server notices;
TCP keepalives and `tcp_user_timeout` bound that to about half a minute.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import TYPE_CHECKING, Any

from worker.store.errors import StoreUnavailable
from worker.team import redact

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10


def lock_key(job: str) -> int:
    """The advisory lock key (a signed 64-bit integer) of a job, the same in every worker."""
    digest = hashlib.blake2b(f"cairn leader {job}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Leadership:
    """The jobs this worker leads, held on one dedicated connection (thread-safe)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False

    def leads(self, job: str) -> bool:
        """True when this worker leads `job` now (taking it when no live worker does)."""
        import psycopg

        with self._lock:
            if self._closed:
                return False
            conn = self._live_connection()
            if job in self._held:
                return True
            try:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(job),)).fetchone()
            except psycopg.Error:
                self._drop()
                raise StoreUnavailable(
                    f"the team database {redact(self._url)} was lost while electing a leader"
                ) from None
            if row is not None and row[0]:
                self._held.add(job)
                log.info("this worker now leads %s on %s", job, redact(self._url))
                return True
            return False

    def _live_connection(self) -> psycopg.Connection[Any]:
        """The dedicated connection, checked; a lost one loses every job it held."""
        import psycopg

        if self._conn is not None:
            try:
                self._conn.execute("SELECT 1")
                return self._conn
            except psycopg.Error:
                if self._held:
                    log.warning("lost the leader connection: no longer leading %s", self._held)
                self._drop()
        try:
            self._conn = psycopg.connect(
                self._url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name="cairn leader",
                # A peer that vanished is noticed within about 30 s.
                keepalives=1,
                keepalives_idle=10,
                keepalives_interval=5,
                keepalives_count=3,
                tcp_user_timeout=30_000,
            )
        except psycopg.Error:
            raise StoreUnavailable(
                f"the team database {redact(self._url)} is unreachable (electing a leader)"
            ) from None
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._held.clear()
        if conn is not None:
            try:
                conn.close()
            except Exception:  # closing a broken connection must not hide why it broke
                log.debug("closing the leader connection failed", exc_info=True)

    def close(self) -> None:
        """Give up every job (another worker leads from its next tick)."""
        with self._lock:
            self._closed = True
            self._drop()
