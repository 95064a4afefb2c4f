"""`cairn import claude-mem [DB]`: claude-mem's SQLite database as Cairn items, read-only.

claude-mem (npm `claude-mem`) keeps sessions (`sdk_sessions`), the prompts typed in them
(`user_prompts`), observations it distilled from tool use (`observations`: type, title, subtitle,
narrative, facts, concepts, files) and one summary per session (`session_summaries`: request,
investigated, learned, completed, next steps). They become, with their dates and projects: a
session and its prompts; a `note` observation per observation (a `decision` is also saved as a
decision memory); the session's summary (and its full text as a note of the session). Each carries an event id naming its claude-mem row, so
importing again stores nothing new. Only schema versions this was tested on are read (the
fixture in tests/fixtures/claude_mem/ is made by claude-mem's own code); another version is
refused with a message naming it, since its columns may mean something else.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.clock import to_iso


@dataclass(frozen=True)
class Dialect:
    """Where a tool keeps each kind of row (kiro-memory's database is laid out like claude-mem's
    under other table names: worker/imports/kiro_memory.py)."""

    tool: str
    sessions: str
    prompts: str
    summaries: str
    summary_session: str  # the summaries column naming the session
    prompts_have_project: bool
    # schema_versions.max(version) of the releases this import was tested against.
    known_versions: frozenset[int]

    @property
    def tables(self) -> tuple[str, ...]:
        return (self.sessions, self.prompts, "observations", self.summaries)


# claude-mem 13.25.3: schema version 52.
CLAUDE_MEM = Dialect(
    "claude-mem",
    "sdk_sessions",
    "user_prompts",
    "session_summaries",
    "memory_session_id",
    False,
    frozenset({52}),
)


class SourceError(Exception):
    """The database cannot be read as the tool's database (message for the user)."""


def default_path() -> Path:
    return Path.home() / ".claude-mem" / "claude-mem.db"


def open_read_only(path: Path, dialect: Dialect = CLAUDE_MEM) -> sqlite3.Connection:
    """The database opened read-only (never written, not even its WAL)."""
    if not path.is_file():
        raise SourceError(
            f"no {dialect.tool} database at {path} (pass its path: cairn import {dialect.tool} DB)"
        )
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
    except sqlite3.Error as exc:
        raise SourceError(f"{path} is not a readable SQLite database: {exc}") from None
    return conn


def schema_version(conn: sqlite3.Connection, path: Path, dialect: Dialect = CLAUDE_MEM) -> int:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in ("schema_versions", *dialect.tables) if t not in tables]
    if missing:
        raise SourceError(
            f"{path} is not a {dialect.tool} database (no table {', '.join(missing)})"
        )
    version = conn.execute("SELECT MAX(version) FROM schema_versions").fetchone()[0]
    if version not in dialect.known_versions:
        known = ", ".join(map(str, sorted(dialect.known_versions)))
        raise SourceError(
            f"{path} has {dialect.tool} schema version {version}, which this import does not "
            f"know (it reads version {known}); nothing was imported"
        )
    return int(version)


@dataclass
class Item:
    """One request to the worker: a spool route (hook request) or a memory."""

    method: str
    path: str
    body: dict[str, Any]
    kind: str  # sessions | prompts | observations | summaries | summary_notes | memories


def _iso(epoch_ms: Any, text: Any) -> str | None:
    if isinstance(epoch_ms, int) and epoch_ms > 0:
        return to_iso(epoch_ms)
    return text if isinstance(text, str) and text else None


def _list(raw: Any) -> list[str]:
    """A list column: JSON (claude-mem) or comma-separated text (kiro-memory's files, concepts)."""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return [part.strip() for part in raw.split(",") if part.strip()]
    else:
        value = raw
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list):
        return []
    return [str(v) for v in value if isinstance(v, str | int | float)]


def items(conn: sqlite3.Connection, dialect: Dialect = CLAUDE_MEM) -> Iterator[Item]:
    """Every row as a Cairn request, sessions first, each session's items in time order."""
    tool = dialect.tool

    def session_id(content_session_id: str) -> str:
        return f"{tool}:{content_session_id}"[:200]

    # memory (and content) session id -> (cairn session, project)
    sessions: dict[str, tuple[str, str]] = {}
    for row in conn.execute(f"SELECT * FROM {dialect.sessions} ORDER BY started_at_epoch, id"):
        sid = session_id(str(row["content_session_id"]))
        project = str(row["project"] or "unknown")
        sessions[str(row["content_session_id"])] = (sid, project)
        if row["memory_session_id"]:
            sessions[str(row["memory_session_id"])] = (sid, project)
        body = {"session_id": sid, "project": project, "event_id": f"{tool}:session:{row['id']}"}
        started = _iso(row["started_at_epoch"], row["started_at"])
        if started:
            body["started_at"] = started
        yield Item("POST", "/api/sessions", body, "sessions")
    query = (
        f"SELECT * FROM {dialect.prompts} ORDER BY created_at_epoch, id"
        if dialect.prompts_have_project
        else f"SELECT p.*, s.project FROM {dialect.prompts} p LEFT JOIN {dialect.sessions} s "
        "ON s.id = p.session_db_id ORDER BY p.created_at_epoch, p.id"
    )
    for row in conn.execute(query):
        text = str(row["prompt_text"] or "").strip()
        if not text:
            continue
        content = str(row["content_session_id"])
        body = {
            "session_id": session_id(content),
            "project": str(row["project"] or sessions.get(content, ("", "unknown"))[1]),
            "text": text,
            "event_id": f"{tool}:prompt:{row['id']}",
        }
        created = _iso(row["created_at_epoch"], row["created_at"])
        if created:
            body["created_at"] = created
        yield Item("POST", "/api/prompts", body, "prompts")
    for row in conn.execute("SELECT * FROM observations ORDER BY created_at_epoch, id"):
        yield from _observation(row, sessions, tool)
    for row in conn.execute(f"SELECT * FROM {dialect.summaries} ORDER BY created_at_epoch, id"):
        session = sessions.get(str(row[dialect.summary_session]))
        project = str(row["project"] or (session[1] if session else "unknown"))
        parts = [
            ("Request", row["request"]),
            ("Investigated", row["investigated"]),
            ("Learned", row["learned"]),
            ("Completed", row["completed"]),
            ("Next steps", row["next_steps"]),
            ("Notes", row["notes"]),
        ]
        text = "\n".join(f"{name}: {value}" for name, value in parts if value)
        body = {"last_assistant_message": text, "event_id": f"{tool}:summary:{row['id']}"}
        at = _iso(row["created_at_epoch"], row["created_at"])
        if at:
            body["at"] = at
        if session is not None:
            yield Item("POST", f"/api/sessions/{session[0]}/summarize", body, "summaries")
        # Cairn's summary keeps what it can parse of that text; the whole of it stays searchable
        # as a note of the session.
        note: dict[str, Any] = {
            "project": project,
            "type": "note",
            "title": f"Session summary: {row['request'] or tool + ' session'}"[:500],
            "body": text,
            "files": list(dict.fromkeys(_columns(row, "files_edited", "files_read")))[:50],
            "event_id": f"{tool}:summary-note:{row['id']}",
            "meta": {"source": tool, "source_type": "session_summary"},
        }
        if at:
            note["created_at"] = at
        if session is not None:
            note["session_id"] = session[0]
        yield Item("POST", "/api/observations", note, "summary_notes")


def _columns(row: sqlite3.Row, *names: str) -> list[str]:
    """The JSON lists in these columns, where the table has them."""
    keys = row.keys()
    return [v for name in names if name in keys for v in _list(row[name])]


def _observation(
    row: sqlite3.Row, sessions: dict[str, tuple[str, str]], tool: str
) -> Iterator[Item]:
    session = sessions.get(str(row["memory_session_id"]))
    project = str(row["project"] or (session[1] if session else "unknown"))
    title = str(row["title"] or row["subtitle"] or row["text"] or "").strip()
    if not title:
        return
    facts = _list(row["facts"])
    body_parts = [row["subtitle"], row["narrative"], row["text"], *(f"- {f}" for f in facts)]
    text = "\n".join(str(p) for p in body_parts if p)
    files = list(dict.fromkeys(_list(row["files_modified"]) + _list(row["files_read"])))
    created = _iso(row["created_at_epoch"], row["created_at"])
    kind = str(row["type"] or "")
    obs: dict[str, Any] = {
        "project": project,
        "type": "note",
        "title": title[:500],
        "body": text,
        "files": files[:50],
        "event_id": f"{tool}:observation:{row['id']}",
        "meta": {"source": tool, "source_type": kind, "concepts": _list(row["concepts"])},
    }
    if session is not None:
        obs["session_id"] = session[0]
    if created:
        obs["created_at"] = created
    yield Item("POST", "/api/observations", obs, "observations")
    if kind == "decision":
        memory = {
            "kind": "decision",
            "content": f"{title}: {detail}"
            if (detail := row["narrative"] or row["text"])
            else title,
            "project": project,
            "event_id": f"{tool}:decision:{row['id']}",
        }
        if created:
            memory["created_at"] = created
        yield Item("POST", "/api/memories", memory, "memories")
