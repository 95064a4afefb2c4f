"""pgvector, where the database server has it: a `vector` column beside each stored blob.

Vectors are always stored as little-endian float32 `bytea` (as on SQLite: export, the in-memory
index and a server without pgvector all read that). When the extension can be used, a memory's
row also holds the vector as pgvector's type, and the memories' nearest neighbours are found by
the database through an HNSW index (cosine), one partial index per dimension (a model's vectors
share one). Without it the worker compares the blobs itself (store/memory_vectors.py).

Search's vectors are the items' context vectors (the item mixed with the one before it in its
thread, retrieval/service.py), written beside the plain one in `context_embedding` with an HNSW
index of their own: the vector half of a search is then one query (store/vector_search.py), and
a worker on the team database holds no item's vector in memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from worker.store.pg.migrations import MIGRATION_LOCK

if TYPE_CHECKING:
    import psycopg

    from worker.store.db import Db
    from worker.store.pg.connection import PgRow

NOT_INSTALLED = (
    "worker (numpy): the pgvector extension is not installed on the database server; "
    "install it (package postgresql-NN-pgvector) for vector search in the database"
)
NOT_ALLOWED = (
    "worker (numpy): pgvector is installed but this database role may not create the "
    "extension; run `CREATE EXTENSION vector` once as a superuser"
)
IN_DATABASE = "pgvector (HNSW, cosine)"


def enable(conn: psycopg.Connection[PgRow]) -> tuple[bool, str]:
    """(pgvector in use, how vectors are searched: the status line). `conn` is in autocommit."""
    import psycopg

    row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if row is None:
        return False, NOT_INSTALLED
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS embedding vector")
            conn.execute("ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS context_embedding vector")
    except psycopg.errors.InsufficientPrivilege:
        return False, NOT_ALLOWED
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return True, IN_DATABASE


def session_settings(conn: psycopg.Connection[PgRow]) -> list[str]:
    """Settings every connection takes once pgvector is in use: from pgvector 0.8 an HNSW scan
    filtered by scope goes on past its first candidates (in exact distance order) until it has
    `limit` rows; before 0.8 a selective filter could leave fewer rows than asked."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    version = tuple(int(p) for p in str(row[0]).split(".")[:2] if p.isdigit()) if row else ()
    return ["SET hnsw.iterative_scan = strict_order"] if version >= (0, 8) else []


def ensure_index(db: Db, dim: int) -> None:
    """The HNSW indexes of `dim`-long vectors (plain and context), made the first time one is
    stored."""
    for column, name in (
        ("embedding", f"embeddings_hnsw_{int(dim)}"),
        ("context_embedding", f"embeddings_context_hnsw_{int(dim)}"),
    ):
        if db.execute("SELECT 1 FROM pg_indexes WHERE indexname = ?", (name,)).fetchone():
            continue
        db.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON embeddings USING hnsw "
            f"(({column}::vector({int(dim)})) vector_cosine_ops) "
            f"WHERE dim = {int(dim)} AND {column} IS NOT NULL"
        )


def literal(values: list[float]) -> str:
    """A vector as pgvector's text form, cast in SQL with `?::vector(n)`."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"
