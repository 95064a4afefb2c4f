"""Migration 1: the core tables, FTS5 indexes and their sync triggers."""

TOKENIZE = "porter unicode61 remove_diacritics 2"


def _fts(table: str, columns: list[str]) -> list[str]:
    """An external-content FTS5 table over `table` kept in sync by triggers."""
    cols = ", ".join(columns)
    new_vals = ", ".join(f"new.{c}" for c in columns)
    old_vals = ", ".join(f"old.{c}" for c in columns)
    fts = f"{table}_fts"
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({cols}, content='{table}', "
        f"content_rowid='id', tokenize='{TOKENIZE}')",
        f"CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {fts}(rowid, {cols}) VALUES (new.id, {new_vals}); END",
        f"CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.id, {old_vals}); END",
        f"CREATE TRIGGER {table}_au AFTER UPDATE OF {cols} ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.id, {old_vals}); "
        f"INSERT INTO {fts}(rowid, {cols}) VALUES (new.id, {new_vals}); END",
    ]


STATEMENTS: list[str] = [
    """CREATE TABLE projects (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL
    )""",
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        parent_id TEXT,
        cwd TEXT,
        source TEXT,
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        end_reason TEXT,
        status TEXT NOT NULL DEFAULT 'active',
        plan TEXT,
        meta TEXT
    )""",
    "CREATE INDEX sessions_project ON sessions(project_id, started_at)",
    """CREATE TABLE prompts (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        number INTEGER NOT NULL,
        text TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        meta TEXT,
        UNIQUE (session_id, number)
    )""",
    "CREATE INDEX prompts_project ON prompts(project_id, created_at)",
    """CREATE TABLE observations (
        id INTEGER PRIMARY KEY,
        session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        type TEXT NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL DEFAULT '',
        files TEXT NOT NULL DEFAULT '[]',
        tool_name TEXT,
        content_hash TEXT NOT NULL,
        importance INTEGER NOT NULL DEFAULT 2,
        created_at INTEGER NOT NULL,
        retrieval_count INTEGER NOT NULL DEFAULT 0,
        access_count INTEGER NOT NULL DEFAULT 0,
        last_retrieved_at INTEGER,
        archived_at INTEGER,
        meta TEXT
    )""",
    "CREATE INDEX observations_project ON observations(project_id, created_at)",
    "CREATE INDEX observations_session ON observations(session_id, created_at)",
    "CREATE INDEX observations_type ON observations(project_id, type, created_at)",
    "CREATE INDEX observations_hash ON observations(project_id, content_hash)",
    """CREATE TABLE summaries (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL UNIQUE REFERENCES sessions(id) ON DELETE CASCADE,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        request TEXT NOT NULL DEFAULT '',
        completed TEXT NOT NULL DEFAULT '',
        learned TEXT NOT NULL DEFAULT '',
        files TEXT NOT NULL DEFAULT '[]',
        next_steps TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        meta TEXT
    )""",
    "CREATE INDEX summaries_project ON summaries(project_id, created_at)",
    """CREATE TABLE checkpoints (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        trigger TEXT,
        task TEXT NOT NULL DEFAULT '',
        progress TEXT NOT NULL DEFAULT '',
        next_steps TEXT NOT NULL DEFAULT '',
        open_questions TEXT NOT NULL DEFAULT '',
        files TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL,
        meta TEXT
    )""",
    "CREATE INDEX checkpoints_session ON checkpoints(session_id, created_at)",
    "CREATE INDEX checkpoints_project ON checkpoints(project_id, created_at)",
    """CREATE TABLE memories (
        id INTEGER PRIMARY KEY,
        project_id INTEGER REFERENCES projects(id) ON DELETE CASCADE,
        session_id TEXT,
        kind TEXT NOT NULL,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        importance INTEGER NOT NULL DEFAULT 3,
        pinned INTEGER NOT NULL DEFAULT 0,
        expires_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        hit_count INTEGER NOT NULL DEFAULT 0,
        retrieval_count INTEGER NOT NULL DEFAULT 0,
        access_count INTEGER NOT NULL DEFAULT 0,
        last_retrieved_at INTEGER,
        archived_at INTEGER,
        superseded_by INTEGER REFERENCES memories(id) ON DELETE SET NULL,
        meta TEXT
    )""",
    "CREATE INDEX memories_project ON memories(project_id, created_at)",
    "CREATE INDEX memories_hash ON memories(project_id, content_hash)",
    """CREATE TABLE memory_relations (
        id INTEGER PRIMARY KEY,
        from_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        to_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('updates', 'extends', 'derives')),
        created_at INTEGER NOT NULL,
        UNIQUE (from_id, to_id, kind)
    )""",
    "CREATE INDEX memory_relations_to ON memory_relations(to_id)",
    """CREATE TABLE received_events (
        event_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        item_id TEXT,
        created_at INTEGER NOT NULL
    )""",
    """CREATE TABLE embeddings (
        item_kind TEXT NOT NULL,
        item_id INTEGER NOT NULL,
        project_id INTEGER,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (item_kind, item_id)
    )""",
    "CREATE INDEX embeddings_model ON embeddings(model, project_id)",
    """CREATE TABLE kv (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    )""",
    *_fts("observations", ["title", "body", "files"]),
    *_fts("memories", ["content", "tags"]),
    *_fts("prompts", ["text"]),
    *_fts("summaries", ["request", "completed", "learned", "next_steps"]),
]
