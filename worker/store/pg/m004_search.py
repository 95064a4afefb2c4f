"""PostgreSQL migration 4: what search follows and records (SQLite's m002 and m010).

- `search_changes`: which keyword-index rows changed (rid = item id * 8 + kind code, as on
  SQLite's migration 10), one entry per row with a sequence number, written by PL/pgSQL triggers
  on the four searchable tables. The in-memory BM25 scorer of each worker
  (retrieval/keyword_index.py) reads the entries newer than the last it applied before a query,
  so a worker's search sees every item another worker committed. Writes are serialised across
  workers (`pg_advisory_xact_lock`, pg/__init__.py), so sequence order is commit order.
  (Since migration 6 a worker searches keywords in the database and no longer reads it.)
- `vector_changes`: the same for stored vectors (`embeddings`), keyed by item: each worker holds
  every vector in memory (retrieval/vectors.py) and learns of another worker's from here.
  SQLite needs no such log: one worker writes its file.
- `context_injections`: which items a session was given (SQLite's m002), dropped with the session.
- thread indexes: an item's neighbours in its session (store/items.py) by an index condition.

There is no `search_index` table: its analysed terms come from worker/terms.py, which
PostgreSQL cannot run, so the reader analyses the item columns as SQLite's triggers do
(store/index_rows.py).
"""

from worker.store.m002_retrieval import KIND_CODES, SOURCES

_RECORD_ROW = """INSERT INTO search_changes(rid, seq) VALUES ({row}.id * 8 + TG_ARGV[0]::bigint,
            nextval('search_changes_order'))
        ON CONFLICT (rid) DO UPDATE SET seq = excluded.seq;"""

_RECORD_VECTOR = """INSERT INTO vector_changes(item_kind, item_id, seq)
        VALUES ({row}.item_kind, {row}.item_id, nextval('vector_changes_order'))
        ON CONFLICT (item_kind, item_id) DO UPDATE SET seq = excluded.seq;"""


def _logging_function(name: str, record: str) -> str:
    """A trigger function logging the changed row: the old one (deleted or updated away) and
    the new one (inserted or updated)."""
    return f"""CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                {record.format(row="OLD")}
            END IF;
            IF TG_OP <> 'DELETE' THEN
                {record.format(row="NEW")}
            END IF;
            RETURN NULL;
        END $$"""


def _statements() -> list[str]:
    out = [
        """CREATE TABLE search_changes (
            rid BIGINT PRIMARY KEY,
            seq BIGINT NOT NULL
        )""",
        "CREATE INDEX search_changes_seq ON search_changes(seq)",
        "CREATE SEQUENCE search_changes_order",
        _logging_function("cairn_search_change", _RECORD_ROW),
        """CREATE TABLE vector_changes (
            item_kind TEXT NOT NULL,
            item_id BIGINT NOT NULL,
            seq BIGINT NOT NULL,
            PRIMARY KEY (item_kind, item_id)
        )""",
        "CREATE INDEX vector_changes_seq ON vector_changes(seq)",
        "CREATE SEQUENCE vector_changes_order",
        _logging_function("cairn_vector_change", _RECORD_VECTOR),
        "CREATE TRIGGER embeddings_changes AFTER INSERT OR DELETE OR UPDATE OF item_kind, "
        "item_id, project_id, model, dim, vector ON embeddings "
        "FOR EACH ROW EXECUTE FUNCTION cairn_vector_change()",
        """CREATE TABLE context_injections (
            session_id TEXT NOT NULL,
            item_kind TEXT NOT NULL,
            item_id BIGINT NOT NULL,
            injected_at BIGINT NOT NULL,
            PRIMARY KEY (session_id, item_kind, item_id)
        )""",
        # As SQLite's trigger (not a foreign key): an injection may name a session not stored.
        """CREATE FUNCTION cairn_session_injections() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM context_injections WHERE session_id = OLD.id;
            RETURN NULL;
        END $$""",
        "CREATE TRIGGER sessions_injections_ad AFTER DELETE ON sessions "
        "FOR EACH ROW EXECUTE FUNCTION cairn_session_injections()",
    ]
    # An item's thread (store/items.py `neighbours`): same project and session, NULL matching
    # NULL, in time order.
    for table in ("observations", "memories", "prompts"):
        out.append(
            f"CREATE INDEX {table}_thread ON {table} "
            "((COALESCE(project_id, -1)), (COALESCE(session_id, '')), created_at, id)"
        )
    for kind, (table, _title, _body, _project, watched) in SOURCES.items():
        out.append(
            f"CREATE TRIGGER {table}_search_changes AFTER INSERT OR DELETE OR UPDATE OF "
            f"{watched} ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION cairn_search_change('{KIND_CODES[kind]}')"
        )
    return out


STATEMENTS: list[str] = _statements()
