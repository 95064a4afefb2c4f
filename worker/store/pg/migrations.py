"""PostgreSQL migrations: numbered steps recorded in schema_migrations, as on SQLite, applied under
an advisory lock so that workers starting together migrate once.

The steps are their own (pg/m001_...): PostgreSQL's schema is not SQLite's translated. A database
whose newest applied step is unknown here was migrated by a newer Cairn: it is refused (its
tables may mean something this version would misread or damage).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias

from worker.clock import now_ms
from worker.errors import ConfigError
from worker.store.pg import (
    m001_memories,
    m002_sessions,
    m003_summaries,
    m004_search,
    m005_relations,
    m006_keyword_terms,
    m007_use,
)

if TYPE_CHECKING:
    import psycopg

    from worker.store.pg.connection import PgRow

# A step's statements: SQL, or a function of the connection for what SQL cannot do (analysing
# stored rows with worker/terms.py), run in the step's transaction.
Statement: TypeAlias = "str | Callable[[psycopg.Connection[PgRow]], None]"
# (version, name, statements). Append only; never edit a released step.
MIGRATIONS: list[tuple[int, str, Sequence[Statement]]] = [
    (1, "memories", m001_memories.STATEMENTS),
    (2, "sessions_prompts_observations", m002_sessions.STATEMENTS),
    (3, "summaries_checkpoints", m003_summaries.STATEMENTS),
    (4, "search", m004_search.STATEMENTS),
    (5, "relations_kv", m005_relations.STATEMENTS),
    (6, "keyword_terms", [*m006_keyword_terms.STATEMENTS, m006_keyword_terms.analyse_stored]),
    (7, "use", m007_use.STATEMENTS),
]
# pg_advisory_lock keys (64-bit): one for migrating, taken by every worker that opens the store.
MIGRATION_LOCK = 0x636169726E_0001  # "cairn", 1


class NewerSchema(ConfigError):
    """The database was migrated by a newer Cairn than this one."""


def latest_version() -> int:
    return max(version for version, _name, _statements in MIGRATIONS)


def applied_versions(conn: psycopg.Connection[PgRow]) -> set[int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
    )
    return {int(row[0]) for row in conn.execute("SELECT version FROM schema_migrations")}


def refuse_newer(done: set[int], where: str) -> None:
    """Raise NewerSchema when `done` holds a step this version does not know."""
    newest, known = max(done, default=0), latest_version()
    if newest > known:
        raise NewerSchema(
            f"the team database {where} has schema version {newest}, from a newer Cairn "
            f"(this one knows up to {known}): upgrade Cairn on this machine "
            "(`pip install -U cairn`), or point it at another database"
        )


def apply_migrations(conn: psycopg.Connection[PgRow], where: str) -> list[int]:
    """Apply pending steps in order, each in its own transaction with its record; returns the
    versions applied now. `conn` is in autocommit mode; `where` names the database (redacted)."""
    # A session lock, held across the steps' transactions: a second worker waits here, then
    # finds every step recorded and applies nothing.
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        done = applied_versions(conn)
        refuse_newer(done, where)
        applied: list[int] = []
        for version, name, statements in MIGRATIONS:
            if version in done:
                continue
            with conn.transaction():
                for statement in statements:
                    if callable(statement):
                        statement(conn)
                    else:
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations(version, name, applied_at) VALUES (%s, %s, %s)",
                    (version, name, now_ms()),
                )
            applied.append(version)
        return applied
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
