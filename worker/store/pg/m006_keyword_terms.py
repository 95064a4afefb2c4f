"""PostgreSQL migration 6: the keyword index in the database, so no worker builds one in memory.

Each searchable table gets the analysed terms SQLite's `search_index` holds (worker/terms.py,
filled by the writer: `index_title`, `index_body`; NULL until analysed), and from them, in
generated columns, the set of its terms (`index_terms`, GIN-indexed: the rows holding a term
are an index lookup) and their count (`index_length`, BM25's document length).

BM25 also needs each term's document frequency and the corpus's size and mean length. A count
over the GIN index costs a visit to every row holding the term (hundreds of milliseconds for a
common word at 1M items), so statement triggers keep them as rows are written: `keyword_terms`
(rows holding a term, per project; -1 the global items) and `keyword_totals` (rows and terms per
project). Writes are serialised across workers (pg/__init__.py), so these counters never race.

The terms are the worker's, not PostgreSQL's 'english'/'italian' stems (`search_vector`,
migrations 1-3): the same terms as SQLite's, so BM25 gives the same scores on both backends.
Rows stored before this step are analysed by it (`analyse_stored`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from worker.store.keyword_terms import ANALYSED, analyse

if TYPE_CHECKING:
    import psycopg

    from worker.store.pg.connection import PgRow

TABLES = tuple(table for table, _title, _body in ANALYSED.values())
# Rows analysed per statement when this step fills the stored rows.
FILL_BATCH = 2000

# A term longer than a tsvector lexeme may be (2046 bytes) stays in the analysed text (its
# length counts, as on SQLite) but is not indexed: no query term is that long in practice.
_FUNCTIONS = [
    """CREATE FUNCTION cairn_terms(title text, body text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT array_to_tsvector(COALESCE(array_agg(t), '{}'))
        FROM unnest(string_to_array(title || ' ' || body, ' ')) t
        WHERE t <> '' AND octet_length(t) < 2047 $$""",
    """CREATE FUNCTION cairn_term_count(title text, body text) RETURNS bigint
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT count(*) FROM unnest(string_to_array(title || ' ' || body, ' ')) t
        WHERE t <> '' $$""",
]

# One delta per (term, project) and per project, from the rows a statement added (+1) or
# removed (-1); an UPDATE counts only the rows whose terms, length or project changed.
_APPLY = """
    INSERT INTO keyword_terms AS k (term, project_id, rows)
        SELECT l.lexeme, d.project, SUM(d.sign) FROM {deltas} d
        CROSS JOIN LATERAL unnest(d.terms) l GROUP BY 1, 2
        ON CONFLICT (term, project_id) DO UPDATE SET rows = k.rows + excluded.rows;
    INSERT INTO keyword_totals AS k (project_id, rows, tokens)
        SELECT d.project, SUM(d.sign), SUM(d.sign * d.length) FROM {deltas} d GROUP BY 1
        ON CONFLICT (project_id) DO UPDATE
        SET rows = k.rows + excluded.rows, tokens = k.tokens + excluded.tokens;"""


def _side(rows: str, sign: int) -> str:
    return (
        f"SELECT {sign} AS sign, COALESCE(project_id, -1) AS project, index_terms AS terms, "
        f"index_length AS length FROM {rows} WHERE index_terms IS NOT NULL"
    )


_CHANGED = (
    "(SELECT o.* FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE "
    "(o.index_terms, o.index_length, o.project_id) IS DISTINCT FROM "
    "(n.index_terms, n.index_length, n.project_id))"
)
_CHANGED_NEW = _CHANGED.replace("SELECT o.*", "SELECT n.*")


def _trigger_function(name: str, deltas: str) -> str:
    body = _APPLY.format(deltas=f"({deltas})")
    return f"""CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN {body}
            RETURN NULL;
        END $$"""


def _statements() -> list[str]:
    out = list(_FUNCTIONS)
    for table in TABLES:
        out += [
            f"ALTER TABLE {table} ADD COLUMN index_title TEXT, ADD COLUMN index_body TEXT, "
            "ADD COLUMN index_terms tsvector "
            "GENERATED ALWAYS AS (cairn_terms(index_title, index_body)) STORED, "
            "ADD COLUMN index_length BIGINT "
            "GENERATED ALWAYS AS (cairn_term_count(index_title, index_body)) STORED",
            # A small pending list: every search scans the list of entries not yet merged
            # into the index (up to 4 MB by default: ~3 ms a term at 20k items).
            f"CREATE INDEX {table}_index_terms ON {table} USING gin(index_terms) "
            "WITH (gin_pending_list_limit = 256)",
        ]
    out += [
        """CREATE TABLE keyword_terms (
            term TEXT NOT NULL,
            project_id BIGINT NOT NULL,
            rows BIGINT NOT NULL,
            PRIMARY KEY (term, project_id)
        )""",
        """CREATE TABLE keyword_totals (
            project_id BIGINT PRIMARY KEY,
            rows BIGINT NOT NULL,
            tokens BIGINT NOT NULL
        )""",
        _trigger_function("cairn_keywords_added", _side("new_rows", 1)),
        _trigger_function("cairn_keywords_removed", _side("old_rows", -1)),
        _trigger_function(
            "cairn_keywords_changed",
            f"{_side(_CHANGED + ' c', -1)} UNION ALL {_side(_CHANGED_NEW + ' c', 1)}",
        ),
    ]
    for table in TABLES:
        out += [
            f"CREATE TRIGGER {table}_keywords_added AFTER INSERT ON {table} "
            "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
            "EXECUTE FUNCTION cairn_keywords_added()",
            f"CREATE TRIGGER {table}_keywords_removed AFTER DELETE ON {table} "
            "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
            "EXECUTE FUNCTION cairn_keywords_removed()",
            # Every UPDATE (transition tables take no column list): the function keeps only
            # the rows whose terms or project changed, so a counter's update costs a join.
            f"CREATE TRIGGER {table}_keywords_changed AFTER UPDATE ON {table} "
            "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
            "EXECUTE FUNCTION cairn_keywords_changed()",
        ]
    return out


def analyse_stored(conn: psycopg.Connection[PgRow]) -> None:
    """Analyse the rows stored before this step (in the step's transaction)."""
    for kind, (table, title, body) in ANALYSED.items():
        columns = ", ".join(("id", *title, *body))
        after = 0
        while True:
            rows = conn.execute(
                f"SELECT {columns} FROM {table} WHERE id > %s AND index_body IS NULL "
                "ORDER BY id LIMIT %s",
                (after, FILL_BATCH),
            ).fetchall()
            if not rows:
                break
            after = int(rows[-1][0])
            with conn.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {table} SET index_title = %s, index_body = %s WHERE id = %s",
                    [(*analyse(kind, tuple(row)[1:]), row[0]) for row in rows],
                )


STATEMENTS: list[str] = _statements()
