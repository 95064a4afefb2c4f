"""Migration 2: the analysed keyword index over every searchable kind, and context injections.

`search_index` holds, per item, its title and body as analysed terms (see worker/terms.py): code
identifiers split, English and Italian stems. Triggers call the SQL function `cairn_terms()`, which
the Store registers on every connection, so any write path keeps the index in sync.
"""

from worker.store.sql_terms import SQL_FUNCTION as F
from worker.store.sql_terms import SQL_NEW_TERMS as N

# rowid = item id * 8 + kind code: one FTS table, one BM25 scale across kinds.
KIND_CODES = {"observation": 1, "memory": 2, "prompt": 3, "summary": 4}
KIND_NAMES = {code: kind for kind, code in KIND_CODES.items()}

# kind -> (table, title expression, body expression, project expression, watched columns)
SOURCES: dict[str, tuple[str, str, str, str, str]] = {
    "observation": (
        "observations",
        f"{F}(X.title)",
        f"{F}(X.body, X.files)",
        "X.project_id",
        "title, body, files, project_id",
    ),
    # A memory has no title: its tags are mostly picked from its own words, and weighting them
    # like a title (or counting them twice) skews BM25 toward a few words of each memory
    # (measured on LoCoMo dev); only tag words the text lacks are indexed.
    "memory": (
        "memories",
        "''",
        f"{F}(X.content) || ' ' || {N}(X.tags, X.content)",
        "X.project_id",
        "content, tags, project_id",
    ),
    "prompt": ("prompts", "''", f"{F}(X.text)", "X.project_id", "text, project_id"),
    "summary": (
        "summaries",
        f"{F}(X.request)",
        f"{F}(X.completed, X.learned, X.next_steps, X.files)",
        "X.project_id",
        "request, completed, learned, next_steps, files, project_id",
    ),
}


def insert_statement(kind: str, alias: str) -> str:
    """The index insert for one `kind` row named `alias` (also used by later migrations)."""
    _table, title, body, project, _ = SOURCES[kind]
    code = KIND_CODES[kind]
    values = ", ".join(
        (
            f"{alias}.id * 8 + {code}",
            title.replace("X.", f"{alias}."),
            body.replace("X.", f"{alias}."),
            # Filter tokens: FTS5 intersects them with the terms far faster than it can read
            # an UNINDEXED column row by row.
            f"'k{kind} ' || COALESCE('p' || {project.replace('X.', f'{alias}.')}, 'pglobal')",
            f"'{kind}'",
            f"{alias}.id",
            project.replace("X.", f"{alias}."),
        )
    )
    return (
        "INSERT INTO search_index(rowid, title, body, scope, kind, item_id, project_id) "
        f"SELECT {values}"
    )


_FILE_WRITES_INSERT = (
    "INSERT INTO file_writes(observation_id, project_id, file, created_at) "
    "SELECT new.id, new.project_id, j.value, new.created_at FROM json_each(new.files) j "
    "WHERE json_valid(new.files)"
)


def _statements() -> list[str]:
    out = [
        "CREATE VIRTUAL TABLE search_index USING fts5(title, body, scope, kind UNINDEXED, "
        "item_id UNINDEXED, project_id UNINDEXED, tokenize='unicode61 remove_diacritics 2')",
        # Document frequency per analysed term (query coverage for the refusal rule).
        "CREATE VIRTUAL TABLE search_vocab USING fts5vocab(search_index, 'row')",
        """CREATE TABLE context_injections (
            session_id TEXT NOT NULL,
            item_kind TEXT NOT NULL,
            item_id INTEGER NOT NULL,
            injected_at INTEGER NOT NULL,
            PRIMARY KEY (session_id, item_kind, item_id)
        ) WITHOUT ROWID""",
        "CREATE TRIGGER sessions_injections_ad AFTER DELETE ON sessions BEGIN "
        "DELETE FROM context_injections WHERE session_id = old.id; END",
        # Which files each file_write observation wrote, indexed: staleness asks "was this file
        # written after time T?" for a few files without scanning every observation's JSON.
        """CREATE TABLE file_writes (
            observation_id INTEGER NOT NULL,
            project_id INTEGER NOT NULL,
            file TEXT NOT NULL,
            created_at INTEGER NOT NULL
        )""",
        "CREATE INDEX file_writes_file ON file_writes(project_id, file, created_at)",
        "CREATE INDEX file_writes_observation ON file_writes(observation_id)",
        f"CREATE TRIGGER observations_file_writes_ai AFTER INSERT ON observations "
        f"WHEN new.type = 'file_write' BEGIN {_FILE_WRITES_INSERT}; END",
        "CREATE TRIGGER observations_file_writes_ad AFTER DELETE ON observations BEGIN "
        "DELETE FROM file_writes WHERE observation_id = old.id; END",
        "CREATE TRIGGER observations_file_writes_au AFTER UPDATE OF type, files, project_id, "
        "created_at ON observations BEGIN DELETE FROM file_writes WHERE observation_id = old.id; "
        f"{_FILE_WRITES_INSERT} AND new.type = 'file_write'; END",
        "INSERT INTO file_writes(observation_id, project_id, file, created_at) "
        "SELECT o.id, o.project_id, j.value, o.created_at FROM observations o, json_each(o.files) j "
        "WHERE o.type = 'file_write' AND json_valid(o.files)",
    ]
    for kind, (table, _title, _body, _project, watched) in SOURCES.items():
        code = KIND_CODES[kind]
        delete = f"DELETE FROM search_index WHERE rowid = old.id * 8 + {code};"
        out += [
            f"CREATE TRIGGER {table}_terms_ai AFTER INSERT ON {table} BEGIN "
            f"{insert_statement(kind, 'new')}; END",
            f"CREATE TRIGGER {table}_terms_ad AFTER DELETE ON {table} BEGIN {delete} END",
            f"CREATE TRIGGER {table}_terms_au AFTER UPDATE OF {watched} ON {table} BEGIN "
            f"{delete} {insert_statement(kind, 'new')}; END",
            f"{insert_statement(kind, 'x')} FROM {table} x",
        ]
    # A deleted item's vector is useless and an edited item's is wrong: drop it; the
    # background embedder notices the missing vector and embeds the new text.
    for kind, (table, *_rest) in SOURCES.items():
        drop = f"DELETE FROM embeddings WHERE item_kind = '{kind}' AND item_id = old.id;"
        watched = SOURCES[kind][4]
        out += [
            f"CREATE TRIGGER {table}_embeddings_ad AFTER DELETE ON {table} BEGIN {drop} END",
            f"CREATE TRIGGER {table}_embeddings_au AFTER UPDATE OF {watched} ON {table} "
            f"BEGIN {drop} END",
        ]
    return out


STATEMENTS: list[str] = _statements()
