"""Which store the worker runs on: the SQLite file in CAIRN_HOME, or a team's PostgreSQL database.

`Backend` is what the worker's layers need of either store (Store, PgStore): reads and writes
of a function over a connection, run in a transaction, and what status reports. The functions
handed in take the store's connection (`Db`, store/db.py), typed `Any` here because the store's
query modules are typed against the connection they accept.

`open_store(settings)` opens the one the configuration names: a team database URL
(CAIRN_DATABASE_URL, else "database_url" in config.json, worker/team.py) selects PostgreSQL;
without one nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from worker.settings import Settings

T = TypeVar("T")


class Backend(Protocol):
    backend: str  # "sqlite" or "postgres"

    @property
    def where(self) -> str:
        """Where the data is, printable: the file's path, or the URL with its password masked."""
        ...

    # A damaged file moved aside at this start (SQLite only).
    recovered_from: Path | None

    def open(self) -> None: ...

    def close(self) -> None: ...

    async def read(self, fn: Callable[[Any], T]) -> T: ...

    async def write(self, fn: Callable[[Any], T]) -> T: ...

    async def write_items(
        self, fn: Callable[[Any, list[Any]], list[Any]], items: list[Any]
    ) -> list[Any]: ...

    def read_sync(self, fn: Callable[[Any], T]) -> T: ...

    def write_sync(self, fn: Callable[[Any], T]) -> T: ...

    def corrupt_copies(self) -> list[Path]: ...

    def db_size_bytes(self) -> int: ...

    def add_recovery_listener(self, listener: Callable[[], None]) -> None:
        """Call `listener` (from any thread) when the store answers again after an outage."""
        ...

    def leads(self, job: str) -> bool:
        """Whether this worker runs `job` now (one worker per team database; always on SQLite)."""
        ...

    def describe(self) -> dict[str, Any]:
        """What status shows of the store (never a password)."""
        ...


def make_store(settings: Settings, url: str = "") -> Backend:
    """The store the configuration names (not opened): PostgreSQL for a team database URL."""
    if url:
        from worker.store.pg import PgStore

        return PgStore(url)
    from worker.store import Store

    return Store(
        settings.db_path,
        busy_timeout_ms=settings.database.busy_timeout_ms,
        max_db_bytes=settings.database.max_bytes,
        group_commit_delay=settings.database.group_commit_delay_ms / 1000,
    )
