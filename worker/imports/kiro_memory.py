"""`cairn import kiro-memory [DB]`: kiro-memory's SQLite database, read as claude-mem's is.

kiro-memory (npm `kiro-memory`) keeps the same kinds of rows as claude-mem under other table
names (`sessions`, `prompts` with their project, `observations`, `summaries`), so the reader in
worker/imports/claude_mem.py maps them with this dialect. Its SDK files observations and summaries
under a session of their own ("sdk-<time>"), not the one the prompts belong to: those are
imported with their project and dates but without a session.
"""

from __future__ import annotations

import os
from pathlib import Path

from worker.imports.claude_mem import Dialect

# kiro-memory 3.1.1: schema version 13.
KIRO_MEMORY = Dialect(
    "kiro-memory",
    "sessions",
    "prompts",
    "summaries",
    "session_id",
    True,
    frozenset({13}),
)


def default_path(env: dict[str, str] | None = None) -> Path:
    """Where kiro-memory keeps its database: $KIRO_MEMORY_DATA_DIR (or $CONTEXTKIT_DATA_DIR),
    else ~/.contextkit when it exists, else ~/.kiro-memory; contextkit.db when it exists there,
    else kiro-memory.db."""
    env = dict(os.environ) if env is None else env
    home = Path.home()
    legacy = home / ".contextkit"
    folder = Path(
        env.get("KIRO_MEMORY_DATA_DIR")
        or env.get("CONTEXTKIT_DATA_DIR")
        or (legacy if legacy.exists() else home / ".kiro-memory")
    )
    old = folder / "contextkit.db"
    return old if old.exists() else folder / "kiro-memory.db"
