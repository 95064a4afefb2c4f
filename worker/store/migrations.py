"""Numbered migrations recorded in schema_migrations; each step commits with its record."""

from __future__ import annotations

import sqlite3

from worker.clock import now_ms
from worker.store import (
    m001_core,
    m002_retrieval,
    m003_lifecycle,
    m007_dashboard,
    m008_drop_unused_fts,
    m009_observation_index_in_batches,
    m010_search_changes,
    m011_index_switch,
    m012_project_activity,
    m013_memory_dated,
    m014_author,
    m015_shared,
    m016_use,
    m017_session_items,
)

# (version, name, statements). Append only; never edit a released step.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "core", m001_core.STATEMENTS),
    (2, "retrieval", m002_retrieval.STATEMENTS),
    (3, "memory_lifecycle", m003_lifecycle.STATEMENTS),
    (7, "dashboard_time_indexes", m007_dashboard.STATEMENTS),
    (8, "drop_unused_fts", m008_drop_unused_fts.STATEMENTS),
    (9, "observation_index_in_batches", m009_observation_index_in_batches.STATEMENTS),
    (10, "search_changes", m010_search_changes.STATEMENTS),
    (11, "index_switch", m011_index_switch.STATEMENTS),
    (12, "project_activity", m012_project_activity.STATEMENTS),
    (13, "memory_dated", m013_memory_dated.STATEMENTS),
    (14, "author", m014_author.STATEMENTS),
    (15, "shared", m015_shared.STATEMENTS),
    (16, "use", m016_use.STATEMENTS),
    (17, "session_items", m017_session_items.STATEMENTS),
]


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def apply_migrations(conn: sqlite3.Connection) -> list[int]:
    """Apply pending steps in order; returns the versions applied now."""
    done = applied_versions(conn)
    applied: list[int] = []
    for version, name, statements in MIGRATIONS:
        if version in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (version, name, now_ms()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(version)
    return applied
