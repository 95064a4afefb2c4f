"""Migration 17: a session's prompts and memories by time, as its observations already are.

The relevance model reads the rest of each judged item's session (store/search.session_items): one
index probe per session instead of a scan of the project's prompts (~12 ms a prompt at 50,000
prompts in a project, 0.3 ms with the index). PostgreSQL's thread indexes (pg/m004_search.py)
serve the same read there.
"""

STATEMENTS: list[str] = [
    "CREATE INDEX IF NOT EXISTS prompts_session ON prompts(session_id, created_at)",
    "CREATE INDEX IF NOT EXISTS memories_session ON memories(session_id, created_at)",
]
