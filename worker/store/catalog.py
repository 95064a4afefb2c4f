"""The database's own description of its tables, read alike on SQLite and PostgreSQL: which data
tables exist, their columns, keys and references, for export/import (store/portability.py).

Each database describes itself in its own catalog (SQLite's pragmas, PostgreSQL's pg_catalog);
the two `Catalog` objects below (chosen by the connection's dialect name) answer the same questions in the same shape, so the export and
the import read one `TableInfo` per table whichever database they run on. Column types are
given in SQLite's words (INTEGER, TEXT, BLOB, REAL): the import's row checks
(worker/ops/import_rows.py) read them, and an export from either database must pass them on the
other.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import ClassVar

from worker.store.db import AnyDb, Db, as_db

# Tables that describe the database itself (index_switch is the insert code's trigger switch),
# or that triggers derive from other rows (file_writes is rebuilt from observations as they are
# imported; search_changes logs keyword index writes for the in-memory index; project_activity,
# the days each project was worked on, is rebuilt from the dated rows as they are imported;
# keyword_terms and keyword_totals, PostgreSQL's BM25 counters, are kept as items are written),
# rather than hold data.
SKIPPED_TABLES = frozenset(
    {
        "schema_migrations",
        "index_switch",
        "file_writes",
        "search_changes",
        "vector_changes",
        "project_activity",
        "keyword_terms",
        "keyword_totals",
    }
)
# Derived from other rows (triggers drop a vector when its item changes): imported last.
LAST_TABLES = ("embeddings",)
# Columns the writer fills from the row's other columns where the database cannot (PostgreSQL's
# keyword index words, from worker/terms.py; pgvector's copies of a vector blob, plain and
# search's context vector): never exported, filled again on import (portability.derived_values;
# an imported item's context copy is its plain vector, not mixed with its thread's).
WRITER_FILLED = {
    "memories": ("search_text", "index_title", "index_body"),
    "prompts": ("search_text", "index_title", "index_body"),
    "observations": ("search_title", "search_text", "index_title", "index_body"),
    "summaries": ("search_title", "search_text", "index_title", "index_body"),
    "embeddings": ("embedding", "context_embedding"),
}


@dataclass
class TableInfo:
    name: str
    columns: list[str]
    key: list[str]  # primary-key columns (empty: compare whole rows)
    # (column, referenced column) of a foreign key to the table itself, e.g. superseded_by -> id
    self_ref: tuple[str, str] | None = None
    # Declared type (upper case, SQLite's words, '' when none) and NOT NULL columns, for checks.
    types: dict[str, str] = field(default_factory=dict)
    not_null: frozenset[str] = frozenset()


class Catalog:
    """SQLite's catalog: `sqlite_master` and the table-valued pragmas."""

    # (name, virtual) of every table; a virtual table's shadow tables are named after it.
    TABLES: ClassVar[str] = (
        "SELECT name, upper(coalesce(sql, '')) LIKE 'CREATE VIRTUAL%' AS virtual "
        "FROM sqlite_master WHERE type = 'table' ORDER BY name"
    )
    # (name, type, not_null, pk, generated) of the table named by the parameter, in order; pk is
    # the column's position in the primary key (0: not in it).
    COLUMNS: ClassVar[str] = (
        'SELECT name, upper(type) AS type, "notnull" AS not_null, pk, 0 AS generated '
        "FROM pragma_table_info(?) ORDER BY cid"
    )
    # (from, table, to) of the table's single-column foreign keys.
    FOREIGN_KEYS: ClassVar[str] = (
        'SELECT "from", "table", "to" FROM pragma_foreign_key_list(?) WHERE "to" IS NOT NULL'
    )

    # An export reads every table from one snapshot: SQLite's read transaction (the store's
    # readers are in autocommit), PostgreSQL's repeatable read (the store's read transaction is
    # open: this must come before its first query).
    SNAPSHOT_BEGIN: ClassVar[str] = "BEGIN"
    SNAPSHOT_END: ClassVar[str | None] = "COMMIT"
    # An import checks references once at the end (rows of one table may point at each other).
    DEFER_FOREIGN_KEYS: ClassVar[str | None] = "PRAGMA defer_foreign_keys = ON"
    FOREIGN_KEY_CHECK: ClassVar[str | None] = "PRAGMA foreign_key_check({table})"
    # A failed statement spoils the whole transaction (PostgreSQL), rather than undoing itself.
    FAILURE_ENDS_TRANSACTION: ClassVar[bool] = False

    def insertion_order(self, alias: str) -> str | None:
        """An ORDER BY term giving a keyless table's rows in a stable order (None: all columns)."""
        return f"{alias}.rowid"

    def integrity_failure(self, exc: Exception) -> str | None:
        """What a failed write says of its row: 'clash' (another row holds its key or a unique
        value), 'missing' (it points at a row that does not exist), 'invalid' (any other
        constraint), None (not a constraint failure)."""
        if not isinstance(exc, sqlite3.IntegrityError):
            return None
        text = str(exc)
        if "UNIQUE" in text or "PRIMARY KEY" in text:
            return "clash"
        return "missing" if "FOREIGN KEY" in text else "invalid"


class PgCatalog(Catalog):
    """PostgreSQL's: pg_catalog, the schema the connection works in."""

    TABLES = (
        "SELECT tablename AS name, 0 AS virtual FROM pg_tables "
        "WHERE schemaname = current_schema() ORDER BY tablename"
    )
    COLUMNS = (
        "SELECT a.attname AS name, "
        "CASE WHEN a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) "
        "THEN 'INTEGER' WHEN a.atttypid = 'bytea'::regtype THEN 'BLOB' "
        "WHEN a.atttypid IN ('float4'::regtype, 'float8'::regtype) THEN 'REAL' "
        "WHEN a.atttypid IN ('text'::regtype, 'varchar'::regtype) THEN 'TEXT' "
        "ELSE upper(format_type(a.atttypid, a.atttypmod)) END AS type, "
        "a.attnotnull AS not_null, COALESCE((SELECT k.n FROM unnest(i.indkey::int2[]) "
        "WITH ORDINALITY AS k(attnum, n) WHERE k.attnum = a.attnum), 0) AS pk, "
        "a.attgenerated <> '' AS generated "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary "
        "WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace "
        "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
    )
    FOREIGN_KEYS = (
        'SELECT a.attname AS "from", rc.relname AS "table", ra.attname AS "to" '
        "FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
        "JOIN pg_class rc ON rc.oid = k.confrelid "
        "JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1] "
        "JOIN pg_attribute ra ON ra.attrelid = k.confrelid AND ra.attnum = k.confkey[1] "
        "WHERE k.contype = 'f' AND cardinality(k.conkey) = 1 AND c.relname = ? "
        "AND c.relnamespace = current_schema()::regnamespace ORDER BY k.conname"
    )

    SNAPSHOT_BEGIN = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"
    SNAPSHOT_END = None  # the store ends its read transaction
    # Constraints are checked per statement: rows come parents first (see the export's order).
    DEFER_FOREIGN_KEYS = None
    FOREIGN_KEY_CHECK = None
    FAILURE_ENDS_TRANSACTION = True

    def insertion_order(self, alias: str) -> str | None:
        return None  # no rowid: every table exported has a key; else all columns

    def integrity_failure(self, exc: Exception) -> str | None:
        import psycopg

        if isinstance(exc, psycopg.errors.UniqueViolation):
            return "clash"
        if isinstance(exc, psycopg.errors.ForeignKeyViolation):
            return "missing"
        if isinstance(exc, psycopg.errors.IntegrityError | psycopg.errors.DataError):
            return "invalid"
        return None


CATALOGS: dict[str, Catalog] = {"sqlite": Catalog(), "postgres": PgCatalog()}


def catalog(db: Db) -> Catalog:
    return CATALOGS[db.dialect.name]


def quote(name: str) -> str:
    """An identifier quoted for either database."""
    return '"' + name.replace('"', '""') + '"'


def tables(conn: AnyDb) -> list[TableInfo]:
    """Ordinary data tables (no FTS/virtual or their shadow tables), parents before children."""
    db = as_db(conn)
    cat = catalog(db)
    rows = db.execute(cat.TABLES).fetchall()
    virtual = [str(r["name"]) for r in rows if r["virtual"]]
    names = [
        str(r["name"])
        for r in rows
        if not str(r["name"]).startswith("sqlite_")
        and r["name"] not in SKIPPED_TABLES
        and r["name"] not in virtual
        and not any(str(r["name"]).startswith(v + "_") for v in virtual)
    ]
    parents: dict[str, set[str]] = {}
    infos: dict[str, TableInfo] = {}
    for name in names:
        filled = WRITER_FILLED.get(name, ())
        cols = [
            c
            for c in db.execute(cat.COLUMNS, (name,)).fetchall()
            if not c["generated"] and c["name"] not in filled
        ]
        key = [str(c["name"]) for c in sorted(cols, key=lambda c: int(c["pk"])) if c["pk"]]
        fks = db.execute(cat.FOREIGN_KEYS, (name,)).fetchall()
        own = [fk for fk in fks if fk["table"] == name]
        self_ref = (str(own[0]["from"]), str(own[0]["to"])) if len(own) == 1 else None
        infos[name] = TableInfo(
            name,
            [str(c["name"]) for c in cols],
            key,
            self_ref,
            types={str(c["name"]): str(c["type"] or "").upper() for c in cols},
            not_null=frozenset(str(c["name"]) for c in cols if c["not_null"] or c["pk"]),
        )
        parents[name] = {str(fk["table"]) for fk in fks if fk["table"] != name} & set(names)
    ordered: list[str] = []
    pending = sorted(names)
    while pending:
        ready = [n for n in pending if parents[n] <= set(ordered)] or pending[:1]
        ordered.extend(ready)
        pending = [n for n in pending if n not in ready]
    ordered.sort(key=lambda n: n in LAST_TABLES)  # stable: keeps parents-first otherwise
    return [infos[n] for n in ordered]


def applied_migrations(conn: AnyDb) -> list[int]:
    db = as_db(conn)
    return [int(r[0]) for r in db.execute("SELECT version FROM schema_migrations ORDER BY 1")]
