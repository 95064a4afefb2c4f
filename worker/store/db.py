"""The store's database edge: what a query module needs of a connection, on SQLite or PostgreSQL.

A ported query module takes a `Db` and writes its SQL once, with `?` placeholders:
`db.execute(sql, params)` and `db.executemany`, `db.insert(sql, params)` for the id of a new row,
and `db.dialect` for the few expressions the two databases spell differently. Every such
difference lives in a `Dialect` (below), never in an `if backend == ...` in a query module.

Transactions are not the connection's business: a store hands a `Db` to a function inside a
read or a write transaction (`Store.read/write` on SQLite, `PgStore.read/write` on PostgreSQL).

On SQLite the `Db` is the connection itself (`SqliteDb`, a `sqlite3.Connection` subclass with the
dialect as a class attribute), so the store's unported modules, which take a plain
`sqlite3.Connection`, receive the same object and a query costs nothing more than before.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, Protocol

from worker.terms import quote, split_text


class Row(Protocol):
    """A result row readable by position and by column name (sqlite3.Row, postgres.PgRow)."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """One connection inside a transaction a store opened."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...

    def insert(self, sql: str, parameters: Sequence[Any]) -> int:
        """Run one `INSERT` into a table with an `id` key; the new row's id."""
        ...

    def tuples(self, sql: str, parameters: Sequence[Any] = ..., /) -> list[tuple[Any, ...]]:
        """Every row of a query as a plain tuple: for reads of many rows read by position (no
        row object per row; on SQLite a third less time for a whole project's rows)."""
        ...

    @property
    def native_vectors(self) -> bool:
        """The database searches vectors itself (pgvector); else the worker compares them."""
        ...


class Dialect:
    """How SQLite spells the expressions that differ between the two databases."""

    name: ClassVar[str] = "sqlite"
    # A planner setting (name, value) an item's thread-neighbour lookup runs under (store/items.py).
    thread_lookup_setting: ClassVar[tuple[str, str] | None] = None
    # The writer fills each memory's analysed text for the keyword index (PostgreSQL cannot run
    # worker/terms.py inside a trigger; SQLite's triggers call it as a SQL function).
    writes_index_text: ClassVar[bool] = False

    def contains(self, haystack: str) -> str:
        """True when the next parameter is a substring of `haystack`."""
        return f"instr({haystack}, ?) > 0"

    def table_exists(self) -> str:
        """A query with a row when the table named by the parameter exists."""
        return "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"

    def json_array_values(self, expr: str, alias: str) -> str:
        """A FROM item over the elements of the JSON array text `expr`, as `alias.value`."""
        return f"json_each({expr}) {alias}"

    def json_valid(self, expr: str) -> str:
        """True when the text `expr` is JSON that `json_array_values` can read."""
        return f"json_valid({expr})"

    def json_text(self, expr: str, key: str) -> str:
        """The text of key `key` (a plain word) of the JSON object text `expr`; NULL when absent."""
        return f"CASE WHEN json_valid({expr}) THEN json_extract({expr}, '$.{key}') END"

    def in_ids(self, column: str) -> str:
        """True when `column` is one of the ids in the next parameter (see `ids_parameter`)."""
        return f"{column} IN (SELECT value FROM json_each(?))"

    def ids_parameter(self, ids: Sequence[int | str]) -> Any:
        # One JSON array: no bound-parameter limit, one statement whatever the count.
        return json.dumps(list(ids))

    def greatest(self, *exprs: str) -> str:
        """The largest of the non-NULL expressions `exprs` (give none that may be NULL: SQLite's
        answer would be NULL, PostgreSQL's the largest of the others)."""
        return f"MAX({', '.join(exprs)})"

    def id_sequence_catch_up(self, table: str) -> str | None:
        """A statement to run after inserting rows of `table` with ids chosen by the writer, or
        None when the database needs none (SQLite's next rowid is always MAX(rowid) + 1)."""
        return None

    def memory_word_match(self) -> tuple[str, str, str]:
        """(FROM items, WHERE clause, newest-first ORDER BY) finding memories `m` whose keyword
        index holds the next parameter, a word given through `word_parameters`."""
        return (
            "memories_fts JOIN memories m ON m.id = memories_fts.rowid",
            "memories_fts MATCH ?",
            "memories_fts.rowid DESC",
        )

    def word_parameters(self, word: str) -> tuple[str, ...]:
        """The parameters of `memory_word_match`'s WHERE clause for one word."""
        return (quote(word),)  # an FTS5 phrase: never read as syntax

    def same_as(self, left: str, right: str, null: str | None = None) -> str:
        """True when two expressions are equal or both NULL (for columns; a parameter: see
        `same_value`). `null`, a value neither holds, lets PostgreSQL use an index on
        COALESCE(column, null) (pg/m004_search.py's thread indexes)."""
        return f"{left} IS {right}"

    def unindexed(self, column: str) -> str:
        """`column` in a form the planner does not look up by index: SQLite's unary plus, for a
        condition whose index would be the wrong one (without ANALYZE statistics SQLite scans a
        project's rows by (project_id, created_at) rather than probe (session_id, created_at))."""
        return f"+{column}"

    def epoch_seconds_now(self) -> str:
        """The database's clock: whole seconds since 1970 (UTC)."""
        return "CAST(strftime('%s', 'now') AS INTEGER)"


class PostgresDialect(Dialect):
    """How PostgreSQL spells them (the connection turns `?` into psycopg's `%s`)."""

    name: ClassVar[str] = "postgres"
    writes_index_text: ClassVar[bool] = True
    # Without incremental sorts the thread index (pg/m004_search.py), whose order is the
    # lookup's (thread, created_at, id), is the one cheap plan. With them the planner walked the
    # created_at index and sorted each run of equal times by id, filtering out the other
    # threads' rows: every row of the window for an item alone in its thread (another worker's
    # new observation, no session: 547 ms a lookup at 1M items on PostgreSQL 15). Ordering by
    # the whole thread key does not help (equal to x's, its thread columns order nothing), and
    # bounding the key by two row values alone left PostgreSQL 15's forward scans running on
    # to the end of the project (it stops a row comparison only on its first column).
    thread_lookup_setting: ClassVar[tuple[str, str] | None] = ("enable_incremental_sort", "off")

    def contains(self, haystack: str) -> str:
        return f"strpos({haystack}, ?) > 0"

    def table_exists(self) -> str:
        return "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?"

    def json_array_values(self, expr: str, alias: str) -> str:
        return f"jsonb_array_elements_text(({expr})::jsonb) AS {alias}(value)"

    def json_valid(self, expr: str) -> str:
        # The writers store JSON arrays (the file_writes trigger refuses other text): an
        # element-wise read needs only the array check.
        return f"jsonb_typeof(({expr})::jsonb) = 'array'"

    def json_text(self, expr: str, key: str) -> str:
        # The writers store JSON objects (dump_json); anything else reads as NULL.
        return f"CASE WHEN ({expr}) LIKE '{{%' THEN (({expr})::jsonb ->> '{key}') END"

    def in_ids(self, column: str) -> str:
        return f"{column} = ANY(?)"

    def ids_parameter(self, ids: Sequence[int | str]) -> Any:
        return list(ids)

    def greatest(self, *exprs: str) -> str:
        return f"GREATEST({', '.join(exprs)})"

    def id_sequence_catch_up(self, table: str) -> str | None:
        # Rows written with explicit ids leave the identity sequence behind: move it past them
        # (writes are serialised across workers, so MAX(id) cannot race another writer).
        return (
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), MAX(id)) FROM {table} "
            "HAVING MAX(id) IS NOT NULL"
        )

    def memory_word_match(self) -> tuple[str, str, str]:
        # A word matches when either language's stem of it is in the row's stemmed words
        # (migration pg001: the analysed text indexed under 'english' and 'italian').
        return (
            "memories m",
            "m.search_vector @@ (plainto_tsquery('english', ?) || plainto_tsquery('italian', ?))",
            "m.id DESC",
        )

    def word_parameters(self, word: str) -> tuple[str, ...]:
        words = split_text(word)  # identifiers split as the index text was
        return (words, words)

    def same_as(self, left: str, right: str, null: str | None = None) -> str:
        if null is None:
            return f"{left} IS NOT DISTINCT FROM {right}"
        # `IS NOT DISTINCT FROM` is no index condition: this form is, with an index on the
        # COALESCE expressions.
        return f"COALESCE({left}, {null}) = COALESCE({right}, {null})"

    def unindexed(self, column: str) -> str:
        return column  # the planner weighs its indexes by statistics it always has

    def epoch_seconds_now(self) -> str:
        return "CAST(floor(extract(epoch FROM now())) AS BIGINT)"


SQLITE = Dialect()
POSTGRES = PostgresDialect()


class SqliteDb(sqlite3.Connection):
    """The Store's SQLite connections: a `sqlite3.Connection` that is also a `Db`."""

    dialect: ClassVar[Dialect] = SQLITE
    native_vectors: ClassVar[bool] = False

    def insert(self, sql: str, parameters: Sequence[Any]) -> int:
        return int(self.execute(sql, parameters).lastrowid or 0)

    def tuples(self, sql: str, parameters: Sequence[Any] = (), /) -> list[tuple[Any, ...]]:
        cursor = self.cursor()
        cursor.row_factory = None
        rows: list[tuple[Any, ...]] = cursor.execute(sql, parameters).fetchall()
        return rows


# What a ported function accepts while the store is being ported module by module: the callers
# of the unported modules (and the layers above) still type their connection as the plain
# `sqlite3.Connection` the Store hands out (at run time a SqliteDb). Once every module is
# ported, this becomes `Db` and `as_db` goes.
AnyDb = Db | sqlite3.Connection


def as_db(conn: AnyDb) -> Db:
    """`conn` as a Db: the Store's SQLite connections and PostgreSQL's already are."""
    if isinstance(conn, SqliteDb):
        return conn
    if isinstance(conn, sqlite3.Connection):
        raise TypeError(
            "a plain sqlite3.Connection is not a store connection: open the database through "
            "the Store, or with sqlite3.connect(..., factory=worker.store.db.SqliteDb)"
        )
    return conn


def same_value(column: str, value: object) -> tuple[str, tuple[object, ...]]:
    """`column` equals `value`, NULL matching NULL, in a form both databases can use an index
    for (`IS ?` on PostgreSQL is `IS NOT DISTINCT FROM`, which no btree index serves)."""
    if value is None:
        return f"{column} IS NULL", ()
    return f"{column} = ?", (value,)
