"""`cairn team push`: copy a local history (the SQLite database in CAIRN_HOME) into the team
database (PostgreSQL), choosing what to share.

What goes: the projects' sessions (the frame the rest hangs on), their memories, session
summaries and checkpoints (shared with the team, as the team worker shares them); prompts and
tool observations only when asked, and then private to their author unless `share`
(docs/team.md). Memories with no project (one person's own preferences) stay local.

What maps: a project's local key (its checkout's path) becomes the team's key, its normalised
`origin` remote (worker/project_identity.py; a path with no network remote stays a path). Row ids
are the team database's own (new identity ids; vectors, supersession links and the received
event ids that dedupe the hooks' replays follow them); session ids, times and authors are kept
(a row with no author gets the pusher's, so that a private row has an owner).

Idempotent: a row is copied only when the team database has no row with the same identity —
a session's id; a memory's project and content (the store merges the same content in a scope);
a summary's session; a checkpoint's session and time; a prompt's session and number; an
observation's session, time and content. Each batch is its own write transaction, so a push cut
short (connection lost, Ctrl-C) leaves whole batches, and running it again copies the rest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from worker.project_identity import project_key
from worker.store.catalog import TableInfo, quote, tables
from worker.store.db import AnyDb, Db, as_db, same_value
from worker.store.errors import InvalidValue
from worker.store.projects import display_name
from worker.store.writer_filled import fill_derived, with_derived

BATCH = 500
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Spec:
    table: str
    match: tuple[str, ...]  # the columns naming the same row in the team database
    kind: str | None  # the item kind of its vectors and received events (None: no id of its own)
    where: str = ""  # which local rows go


SESSIONS = Spec("sessions", ("id",), None)
SHARED = (
    Spec("memories", ("project_id", "content_hash"), "memory", "project_id IS NOT NULL"),
    Spec("summaries", ("session_id",), "summary"),
    Spec("checkpoints", ("session_id", "created_at"), "checkpoint"),
)
PROMPTS = Spec("prompts", ("session_id", "number"), "prompt")
OBSERVATIONS = Spec("observations", ("session_id", "created_at", "content_hash"), "observation")


def team_key(local_key: str) -> str:
    """A local project key as a team database keys it: a checkout's path becomes its remote."""
    return project_key(local_key, team=True) if os.path.isabs(local_key) else local_key


@dataclass
class PushOptions:
    prompts: bool = False
    observations: bool = False
    share: bool = False  # prompts and observations shared with the team, not private
    author: str = ""  # for rows that name none
    projects: tuple[str, ...] = ()  # the local project keys to push (none named: every one)
    key_of: Callable[[str], str] = team_key


@dataclass
class PushResult:
    projects: dict[str, str] = field(default_factory=dict)  # local key -> team key
    tables: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self, table: str, outcome: str, n: int = 1) -> None:
        per = self.tables.setdefault(table, {"copied": 0, "present": 0, "shared": 0})
        per[outcome] += n

    @property
    def copied(self) -> int:
        return sum(t["copied"] for t in self.tables.values())


def specs(options: PushOptions) -> list[Spec]:
    chosen = [SESSIONS, *SHARED]
    if options.prompts:
        chosen.append(PROMPTS)
    if options.observations:
        chosen.append(OBSERVATIONS)
    return chosen


class Push:
    """One push from `read_local(fn)` (the local store's reads) to `write_team(fn)` (the team
    store's write transactions)."""

    def __init__(
        self,
        read_local: Callable[[Callable[[Any], Any]], Any],
        write_team: Callable[[Callable[[Any], Any]], Any],
        options: PushOptions,
        progress: Progress | None = None,
    ) -> None:
        self.read_local = read_local
        self.write_team = write_team
        self.options = options
        self.progress = progress
        self.result = PushResult()
        self.projects: dict[int, int] = {}  # local project id -> team project id
        self.ids: dict[str, dict[int, int]] = {}  # item kind -> local id -> team id
        self.sessions: set[str] = set()  # the session ids in the team database
        self.team_info: dict[str, TableInfo] = {}
        self.done = 0
        self.total = 0

    def run(self) -> PushResult:
        chosen = specs(self.options)
        local_info = {t.name: t for t in self.read_local(tables)}
        self.team_info = {t.name: t for t in self.write_team(tables)}
        self._projects()
        self.total = self.read_local(lambda c: sum(self._count(as_db(c), s) for s in chosen))
        for spec in chosen:
            for rows, vectors in self._local_batches(spec, local_info[spec.table]):
                self.write_team(partial(self._copy, spec=spec, rows=rows, vectors=vectors))
                self.done += len(rows)
                if self.progress is not None:
                    self.progress(self.done, self.total)
        self._supersessions()
        self._received_events()
        if self.progress is not None:
            self.progress(self.total, self.total)
        return self.result

    # ------------------------------------------------------------------ projects
    def _projects(self) -> None:
        rows = self.read_local(
            lambda c: [tuple(r) for r in as_db(c).execute(
                "SELECT id, key, name, created_at FROM projects ORDER BY id"
            )]
        )  # fmt: skip
        if self.options.projects:
            unknown = sorted(set(self.options.projects) - {str(r[1]) for r in rows})
            if unknown:
                known = ", ".join(str(r[1]) for r in rows[:10]) + (
                    ", ..." if len(rows) > 10 else ""
                )
                raise InvalidValue(
                    f"no local project {', '.join(map(repr, unknown))} (recorded here: "
                    f"{known or 'none'})",
                    field="project",
                )
            rows = [r for r in rows if r[1] in self.options.projects]
        for _local_id, key, _name, _created in rows:
            self.result.projects[str(key)] = self.options.key_of(str(key))

        def write(db: Db) -> None:
            for local_id, key, name, created_at in rows:
                team = self.result.projects[str(key)]
                found = db.execute("SELECT id FROM projects WHERE key = ?", (team,)).fetchone()
                if found is None:
                    named = name if team == key else display_name(team)
                    pid = db.insert(
                        "INSERT INTO projects(key, name, created_at) VALUES (?, ?, ?)",
                        (team, named, created_at),
                    )
                    self.result.count("projects", "copied")
                else:
                    pid = int(found[0])
                    self.result.count("projects", "present")
                self.projects[int(local_id)] = pid

        self.write_team(write)

    # ------------------------------------------------------------------ rows
    def _where(self, spec: Spec, db: Db) -> tuple[str, tuple[Any, ...]]:
        """Which local rows of `spec` go: its own rule, and the chosen projects'."""
        if not self.options.projects:
            return spec.where, ()
        scope = db.dialect.in_ids("project_id")
        where = f"{spec.where} AND {scope}" if spec.where else scope
        return where, (db.dialect.ids_parameter(sorted(self.projects)),)

    def _count(self, db: Db, spec: Spec) -> int:
        where, scope = self._where(spec, db)
        sql = f"SELECT COUNT(*) FROM {quote(spec.table)}" + (f" WHERE {where}" if where else "")
        return int(db.execute(sql, scope).fetchone()[0])

    def _local_batches(
        self, spec: Spec, info: TableInfo
    ) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """The local rows of `spec` (and their vectors), BATCH at a time in key order."""
        key = "id"
        last: Any = "" if spec.kind is None else 0
        columns = ", ".join(quote(c) for c in info.columns)
        while True:

            def read(c: AnyDb, after: Any = last) -> tuple[list[dict[str, Any]], list[Any]]:
                db = as_db(c)
                where, scope = self._where(spec, db)
                where = f"{where} AND " if where else ""
                rows = [
                    dict(zip(info.columns, r, strict=True))
                    for r in db.execute(
                        f"SELECT {columns} FROM {quote(spec.table)} WHERE {where}{key} > ? "
                        f"ORDER BY {key} LIMIT ?",
                        (*scope, after, BATCH),
                    )
                ]
                vectors: list[Any] = []
                if spec.kind is not None and rows:
                    vectors = [
                        dict(zip(r.keys(), r, strict=True))
                        for r in db.execute(
                            "SELECT * FROM embeddings WHERE item_kind = ? "
                            f"AND {db.dialect.in_ids('item_id')}",
                            (spec.kind, db.dialect.ids_parameter([r["id"] for r in rows])),
                        )
                    ]
                return rows, vectors

            rows, vectors = self.read_local(read)
            if not rows:
                return
            yield rows, vectors
            last = rows[-1][key]

    def _copy(
        self, db: Db, spec: Spec, rows: list[dict[str, Any]], vectors: list[dict[str, Any]]
    ) -> None:
        info = self.team_info[spec.table]
        ids = self.ids.setdefault(spec.kind, {}) if spec.kind else {}
        copied: set[int] = set()
        for local in rows:
            row = self._mapped(spec, info, local)
            terms = [same_value(quote(c), row.get(c)) for c in spec.match]
            found = db.execute(
                f"SELECT {'id' if spec.kind else '1'}{', shared' if 'shared' in row else ''} "
                f"FROM {quote(spec.table)} WHERE {' AND '.join(t for t, _ in terms)}",
                [v for _, values in terms for v in values],
            ).fetchone()
            if spec.kind is None:
                self.sessions.add(str(local["id"]))
            if found is not None:
                self.result.count(spec.table, "present")
                if spec.kind is not None:
                    ids[int(local["id"])] = int(found[0])
                if "shared" in row and row["shared"] and not found[1]:
                    db.execute(f"UPDATE {spec.table} SET shared = 1 WHERE id = ?", (found[0],))
                    self.result.count(spec.table, "shared")
                continue
            written, filled = with_derived(
                db, spec.table, {c: v for c, v in row.items() if c != "id" or spec.kind is None}
            )
            sql = (
                f"INSERT INTO {quote(spec.table)} ({', '.join(quote(c) for c in written)}) "
                f"VALUES ({', '.join('?' * len(written))})"
            )
            if spec.kind is None:
                db.execute(sql, list(written.values()))
            else:
                new_id = db.insert(sql, list(written.values()))
                ids[int(local["id"])] = new_id
                copied.add(int(local["id"]))
                if not filled:
                    fill_derived(db, spec.table, {"id": new_id})
            self.result.count(spec.table, "copied")
        for vector in vectors:
            if int(vector["item_id"]) in copied:
                self._copy_vector(db, spec, vector, ids[int(vector["item_id"])])

    def _mapped(self, spec: Spec, info: TableInfo, local: dict[str, Any]) -> dict[str, Any]:
        """The local row as the team database stores it: its columns there, project mapped,
        supersession links set afterwards, an author, and the chosen sharing."""
        row = {c: v for c, v in local.items() if c in info.columns and c != "superseded_by"}
        if "project_id" in row and row["project_id"] is not None:
            row["project_id"] = self.projects[int(row["project_id"])]
        if "author" in info.columns and not row.get("author") and self.options.author:
            row["author"] = self.options.author
        if "shared" in info.columns:
            row["shared"] = 1 if self.options.share or local.get("shared") else 0
        return row

    def _copy_vector(self, db: Db, spec: Spec, vector: dict[str, Any], new_id: int) -> None:
        info = self.team_info["embeddings"]
        row = {c: v for c, v in vector.items() if c in info.columns}
        row["item_id"] = new_id
        if row.get("project_id") is not None:
            row["project_id"] = self.projects.get(int(row["project_id"]))
        cols = list(row)
        db.execute(
            f"INSERT INTO embeddings ({', '.join(quote(c) for c in cols)}) "
            f"VALUES ({', '.join('?' * len(cols))}) ON CONFLICT (item_kind, item_id) DO NOTHING",
            [row[c] for c in cols],
        )
        fill_derived(db, "embeddings", row)

    # ------------------------------------------------------------------ links
    def _supersessions(self) -> None:
        """A pushed memory superseded by another pushed one points at it in the team too."""
        pairs = self.read_local(
            lambda c: [
                (int(r[0]), int(r[1]))
                for r in as_db(c).execute(
                    "SELECT id, superseded_by FROM memories WHERE superseded_by IS NOT NULL "
                    "AND project_id IS NOT NULL"
                )
            ]
        )
        ids = self.ids.get("memory", {})
        links = [(ids[by], ids[old]) for old, by in pairs if old in ids and by in ids]
        if links:
            self.write_team(
                lambda db: db.executemany(
                    "UPDATE memories SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL",
                    links,
                )
            )

    def _received_events(self) -> None:
        """The event ids the pushed items arrived with, so a hook replaying one of them to the
        team worker is recognised as already stored."""
        rows = self.read_local(
            lambda c: [
                tuple(r)
                for r in as_db(c).execute(
                    "SELECT event_id, kind, item_id, created_at FROM received_events"
                )
            ]
        )
        events = []
        for event_id, kind, item_id, created_at in rows:
            ids = self.ids.get(kind, {})
            if kind in ("summary", "session"):  # these events name the session
                if item_id in self.sessions:
                    events.append((event_id, kind, item_id, created_at))
            elif str(item_id).isdigit() and int(item_id) in ids:
                events.append((event_id, kind, str(ids[int(item_id)]), created_at))
        if events:
            self.write_team(
                lambda db: db.executemany(
                    "INSERT INTO received_events(event_id, kind, item_id, created_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING",
                    events,
                )
            )
