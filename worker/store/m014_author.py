"""Migration 14: every stored row records its author (git user.email, else the OS user).

On a team database rows of many people share one table; the dashboard shows whose each one is.
Rows stored before this step have no author (NULL): they were made on this machine, by its user,
and are shown without a name.
"""

AUTHORED = ("sessions", "prompts", "observations", "summaries", "checkpoints", "memories")

STATEMENTS: list[str] = [f"ALTER TABLE {table} ADD COLUMN author TEXT" for table in AUTHORED]
