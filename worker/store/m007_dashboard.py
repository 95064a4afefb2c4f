"""Migration 7: time indexes for the dashboard's feed and charts (newest-first across projects)."""

STATEMENTS: list[str] = [
    # The feed pages through all projects newest first; without these it sorts every row.
    "CREATE INDEX IF NOT EXISTS observations_created ON observations(created_at)",
    "CREATE INDEX IF NOT EXISTS prompts_created ON prompts(created_at)",
    "CREATE INDEX IF NOT EXISTS memories_created ON memories(created_at)",
    "CREATE INDEX IF NOT EXISTS summaries_updated ON summaries(updated_at)",
]
