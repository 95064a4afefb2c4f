"""Migration 12: each project's active days, the clock its items age by.

Retention used to count calendar time, so a project left alone for two weeks came back with most
of its history archived, and an import of dated history was archived on arrival. Items now age
by the days their project was worked on: a day counts once anything of the project (a session,
prompt, observation or memory) is dated on it. Triggers keep the table as rows arrive, whatever
the path (hooks, API, import); the step fills it from the rows already stored. Days are UTC day
numbers (epoch ms // 86,400,000).
"""

DAY = "86400000"


def _trigger(table: str, column: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {table}_activity_ai",
        f"CREATE TRIGGER {table}_activity_ai AFTER INSERT ON {table} "
        f"WHEN typeof(new.{column}) = 'integer' AND new.project_id IS NOT NULL "
        "BEGIN INSERT OR IGNORE INTO project_activity(project_id, day) "
        f"VALUES (new.project_id, new.{column} / {DAY}); END",
    ]


def _backfill(table: str, column: str) -> str:
    return (
        "INSERT OR IGNORE INTO project_activity(project_id, day) "
        f"SELECT DISTINCT project_id, {column} / {DAY} FROM {table} "
        f"WHERE typeof({column}) = 'integer' AND project_id IS NOT NULL"
    )


SOURCES = (("sessions", "started_at"), ("prompts", "created_at"), ("observations", "created_at"),
           ("memories", "created_at"))  # fmt: skip

STATEMENTS: list[str] = [
    "CREATE TABLE project_activity ("
    "project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE, "
    "day INTEGER NOT NULL, PRIMARY KEY (project_id, day)) WITHOUT ROWID",
    *[statement for table, column in SOURCES for statement in _trigger(table, column)],
    *[_backfill(table, column) for table, column in SOURCES],
]
