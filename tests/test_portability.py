"""Export / import / backup: round trip into a fresh home, idempotent re-import, conflicts, errors."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from tests.examples import examples
from worker import __version__
from worker.app import create_app
from worker.ops.import_rows import row_check
from worker.retrieval.db_keywords import DatabaseKeywords
from worker.retrieval.keyword_index import KeywordIndex
from worker.settings import Settings, load_settings
from worker.store import Store, portability
from worker.store.db import SqliteDb, as_db
from worker.store.errors import InvalidValue, RowConflict
from worker.store.pg import PgStore

ROOT = "/home/dev/api"


def populate(client: TestClient, settings: Settings) -> None:
    """Real-shaped data through the API, plus rows no endpoint of this test writes directly."""
    client.post("/api/sessions", json={"session_id": "s-1", "project": ROOT, "cwd": ROOT})
    client.post(
        "/api/prompts",
        json={
            "session_id": "s-1",
            "text": "Add rate limiting ✓ ünïcode\u2028line\x85next\x1cfs \U0001f680",
            "event_id": "e-1",
        },
    )
    client.post(
        "/api/observations",
        json={
            "observations": [
                {
                    "project": ROOT,
                    "session_id": "s-1",
                    "type": "file_write",
                    "title": "Edit api/limits.py",
                    "files": [f"{ROOT}/api/limits.py"],
                    "meta": {"tool": "Edit", "n": 1.5},
                },
                {
                    "project": ROOT,
                    "session_id": "s-1",
                    "type": "command",
                    "title": "$ pytest -q",
                    "body": "exit code: 0",
                },
            ]
        },
    )
    client.put("/api/sessions/s-1/plan", json={"plan": [{"content": "tests", "status": "pending"}]})
    client.post(
        "/api/sessions/s-1/summarize",
        json={"last_assistant_message": "The root cause was a missing header."},
    )
    client.post("/api/sessions/s-1/checkpoint", json={"trigger": "manual"})
    client.post("/api/sessions/s-1/end", json={"reason": "exit"})
    client.post("/api/sessions", json={"session_id": "s-2", "project": "/other/repo"})
    assert client.get(f"/api/profile?project={ROOT}").status_code == 200  # cached in kv
    store = Store(settings.db_path)
    store.open()
    try:
        store.write_sync(_raw_rows)
    finally:
        store.close()


def _raw_rows(conn: sqlite3.Connection) -> None:
    pid = conn.execute("SELECT id FROM projects WHERE key = ?", (ROOT,)).fetchone()[0]
    for kind, content in (("decision", "Use Redis for rate limits"), ("fact", "Limits are per IP")):
        conn.execute(
            "INSERT INTO memories(project_id, kind, content, content_hash, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 1700000000000, 1700000000001)",
            (pid, kind, content, content[:16]),
        )
    conn.execute(
        "INSERT INTO memory_relations(from_id, to_id, kind, created_at) VALUES (2, 1, 'extends', 5)"
    )
    conn.execute(
        "INSERT INTO embeddings(item_kind, item_id, project_id, model, dim, vector, created_at) "
        "VALUES ('memory', 1, ?, 'm', 2, ?, 7)",
        (pid, bytes([0, 1, 2, 255, 0, 0, 128, 63])),
    )


def table_dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path, factory=SqliteDb)
    conn.row_factory = sqlite3.Row
    try:
        out = {}
        for info in portability.tables(conn):
            order = ", ".join(info.key) if info.key else "rowid"
            out[info.name] = [
                tuple(r) for r in conn.execute(f"SELECT * FROM {info.name} ORDER BY {order}")
            ]
        return out
    finally:
        conn.close()


@pytest.fixture
def second(tmp_path: Path) -> Iterator[tuple[TestClient, Settings]]:
    """A second, empty Cairn home served by its own app."""
    other = load_settings(home=tmp_path / "second-home")
    with TestClient(create_app(other), base_url=BASE_URL) as c:
        c.headers["Authorization"] = f"Bearer {other.token_path.read_text().strip()}"
        yield c, other


def test_round_trip_into_a_fresh_home(
    client: TestClient, settings: Settings, second: tuple[TestClient, Settings]
) -> None:
    populate(client, settings)
    r = client.get("/api/export")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-ndjson")
    assert "attachment" in r.headers["content-disposition"]
    lines = portability.split_lines(r.text)
    header = json.loads(lines[0])
    assert header["format"] == "cairn-export" and header["cairn"] == __version__
    assert header["rows"] == len(lines) - 1
    exported_tables = {json.loads(line)["table"] for line in lines[1:]}
    assert {"projects", "sessions", "prompts", "observations", "summaries", "checkpoints"} <= (
        exported_tables
    )
    assert {"memories", "memory_relations", "embeddings", "kv", "received_events"} <= (
        exported_tables
    )
    assert not any(t.endswith(("_fts", "_data", "_idx")) for t in exported_tables)

    other_client, other = second
    imported = other_client.post("/api/import", content=r.content)
    assert imported.status_code == 201, imported.text
    body = imported.json()
    assert body["inserted"] == header["rows"] and body["unchanged"] == 0

    assert table_dump(other.db_path) == table_dump(settings.db_path)
    # the keyword index was rebuilt by the triggers: imported rows are searchable
    conn = sqlite3.connect(other.db_path)
    try:
        hits = conn.execute(
            "SELECT rowid FROM search_index WHERE search_index MATCH 'limits' "
            "AND kind = 'observation'"
        ).fetchall()
    finally:
        conn.close()
    assert hits
    # the projects' active days (not exported) were rebuilt from the dated rows
    activity = "SELECT project_id, day FROM project_activity ORDER BY 1, 2"
    with sqlite3.connect(settings.db_path) as a, sqlite3.connect(other.db_path) as b:
        assert b.execute(activity).fetchall() == a.execute(activity).fetchall() != []
    # the imported session reads back like the original through the API
    assert (
        other_client.get("/api/sessions/s-1").json()["summary"]
        == client.get("/api/sessions/s-1").json()["summary"]
    )

    # re-import changes nothing
    before = table_dump(other.db_path)
    again = other_client.post("/api/import", content=r.content)
    assert again.status_code == 200
    assert again.json()["inserted"] == 0 and again.json()["unchanged"] == header["rows"]
    assert table_dump(other.db_path) == before

    # exporting the copy gives the same lines (the header differs only in its time)
    copy = portability.split_lines(other_client.get("/api/export").text)
    assert copy[1:] == lines[1:]
    strip = lambda h: {k: v for k, v in json.loads(h).items() if k != "exported_at"}  # noqa: E731
    assert strip(copy[0]) == strip(lines[0])


def _export_text(settings: Settings) -> list[str]:
    store = Store(settings.db_path)
    store.open()
    out: list[str] = []
    try:
        store.read_sync(
            lambda c: portability.export_to(c, out.append, version="t", visible_to=None)
        )
    finally:
        store.close()
    return portability.split_lines("".join(out))


def _import(settings: Settings, lines: list[str], mode: Any = "fail") -> portability.ImportResult:
    store = Store(settings.db_path)
    store.open()
    try:
        return store.write_sync(
            lambda c: portability.import_lines(
                c, lines, check=row_check(settings), on_conflict=mode
            )
        )
    finally:
        store.close()


def _set_title(store: Store | PgStore, title: str) -> None:
    store.write_sync(
        lambda c: c.execute("UPDATE observations SET title = ? WHERE id = 1", (title,))
    )


def index_rows_of(lines: list[str]) -> list[str]:
    """The exported rows of the four searchable tables (each is one keyword-index row)."""
    tables = ("observations", "memories", "prompts", "summaries")
    return [line for line in lines[1:] if json.loads(line)["table"] in tables]


def _import_into(
    store: Store | PgStore, settings: Settings, lines: list[str], mode: Any = "fail"
) -> portability.ImportResult:
    return store.write_sync(
        lambda c: portability.import_lines(c, lines, check=row_check(settings), on_conflict=mode)
    )


def _dump(store: Store | PgStore) -> list[str]:
    """The store's rows as export lines (the header left out)."""
    out: list[str] = []
    store.read_sync(lambda c: portability.export_to(c, out.append, version="t", visible_to=None))
    return portability.split_lines("".join(out))[1:]


# Tables PostgreSQL does not hold yet (their store modules are ported apart: relations, context
# injections): left out of the exports these tests move into PostgreSQL.
NOT_YET_ON_POSTGRES = ("memory_relations", "context_injections")


def _portable(lines: list[str]) -> list[str]:
    return [lines[0]] + [
        line for line in lines[1:] if json.loads(line)["table"] not in NOT_YET_ON_POSTGRES
    ]


def test_conflicts_fail_skip_replace(
    client: TestClient, settings: Settings, backend_store: Store | PgStore
) -> None:
    """An export imported again into a database holding it (the same SQLite home, or the
    PostgreSQL database it was first imported into) changes nothing, and a row changed since
    is a conflict."""
    populate(client, settings)
    lines = _portable(_export_text(settings))
    _import_into(backend_store, settings, lines)
    original = _dump(backend_store)
    _set_title(backend_store, "changed locally")
    changed = _dump(backend_store)
    assert changed != original
    with pytest.raises(RowConflict) as err:
        _import_into(backend_store, settings, lines)
    assert "observations" in err.value.message and "differs" in err.value.message
    assert _dump(backend_store) == changed  # nothing written
    skipped = _import_into(backend_store, settings, lines, "skip")
    assert skipped.skipped == 1 and skipped.inserted == 0
    assert _dump(backend_store) == changed
    replaced = _import_into(backend_store, settings, lines, "replace")
    assert replaced.replaced == 1
    assert _dump(backend_store) == original


def test_replace_never_revives_a_superseded_memory(client: TestClient, settings: Settings) -> None:
    """An export taken before a memory was superseded, imported with replace, keeps it superseded
    (its `updates` relation still stands): a stale export must not bring an old value back."""
    body = {"kind": "fact", "project": ROOT}
    old = client.post("/api/memories", json={**body, "content": "The API runs on Node 18"}).json()
    lines = _export_text(settings)
    new = client.post("/api/memories", json={**body, "content": "The API runs on Node 20"}).json()
    assert new["supersedes"] == [old["id"]]
    _import(settings, lines, "replace")
    got = client.get(f"/api/memories/{old['id']}").json()
    assert got["superseded_by"] == new["id"] and got["is_latest"] is False


def test_unique_clash_is_a_conflict(client: TestClient, settings: Settings, tmp_path: Path) -> None:
    populate(client, settings)
    lines = _export_text(settings)
    fresh = load_settings(home=tmp_path / "clash")
    store = Store(fresh.db_path)
    store.open()
    try:  # the same project key under another id
        store.write_sync(
            lambda c: c.execute(
                "INSERT INTO projects(id, key, name, created_at) VALUES (99, ?, 'api', 1)", (ROOT,)
            )
        )
    finally:
        store.close()
    with pytest.raises(RowConflict) as err:
        _import(fresh, lines)
    assert "UNIQUE" in err.value.message


def _header(store: Store | PgStore, *, newer: bool = False) -> str:
    versions = store.read_sync(portability.applied_migrations)
    backend = store.read_sync(lambda c: as_db(c).dialect.name)
    return json.dumps(
        {
            "format": "cairn-export",
            "version": 1,
            "backend": backend,
            "migrations": versions + [999] * newer,
        }
    )


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "the import is empty"),
        (['{"table": "projects", "row": {}}'], "not a Cairn export header"),
        (['{"format": "cairn-export", "version": 9}'], "format version 9"),
        (["NEWER"], "newer Cairn"),
        (["HEADER", "{nope"], "line 2: not valid JSON"),
        (["HEADER", '{"table": "nope", "row": {}}'], "line 2: unknown table 'nope'"),
        (["HEADER", '{"table": "kv", "row": {"key": "a", "bad": 1}}'], "no column 'bad'"),
        (["HEADER", '{"table": "kv", "row": {"value": "x"}}'], "lacks its key"),
        (["HEADER", '{"table": "kv", "row": {"key": "a", "value": [1]}}'], "not a column value"),
        (
            [
                "HEADER",
                '{"table": "prompts", "row": {"id": 1, "session_id": "ghost", "project_id": 5,'
                ' "number": 1, "text": "x", "created_at": 1}}',
            ],
            "pointing at missing rows",
        ),
    ],
)
def test_bad_imports_are_rejected_precisely(
    settings: Settings, backend_store: Store | PgStore, lines: list[str], message: str
) -> None:
    store = backend_store
    header, newer = _header(store), _header(store, newer=True)
    real = [{"HEADER": header, "NEWER": newer}.get(line, line) for line in lines]
    with pytest.raises(InvalidValue) as err:
        store.write_sync(lambda c: portability.import_lines(c, real, check=row_check(settings)))
    assert message in err.value.message
    assert store.read_sync(lambda c: c.execute("SELECT COUNT(*) FROM prompts").fetchone()[0]) == 0


def test_import_api_errors(client: TestClient) -> None:
    r = client.post("/api/import", content=b"\xff\xfe")
    assert r.status_code == 400 and "UTF-8" in r.json()["error"]["message"]
    r = client.post("/api/import", content=b"hello\n")
    assert r.status_code == 400 and r.json()["error"]["field"] == "body"
    r = client.post("/api/import?on_conflict=merge", content=b"")
    assert r.status_code == 400 and r.json()["error"]["field"] == "on_conflict"


def test_backup_api_makes_a_complete_copy(client: TestClient, settings: Settings) -> None:
    populate(client, settings)
    r = client.post("/api/backup")
    assert r.status_code == 201, r.text
    info = r.json()
    path = Path(info["path"])
    assert path.parent == settings.backups_dir and path.name.startswith("cairn-")
    assert path.stat().st_mode & 0o777 == 0o600
    assert info["bytes"] == path.stat().st_size
    assert table_dump(path) == table_dump(settings.db_path)
    assert not list(settings.backups_dir.glob("*.partial"))
    listed = client.get("/api/backups").json()["items"]
    assert [item["path"] for item in listed] == [str(path)]


def test_backup_keeps_the_newest(settings: Settings) -> None:
    store = Store(settings.db_path)
    store.open()
    try:
        made = [
            store.read_sync(lambda c: portability.backup(c, settings.backups_dir, keep=2))
            for _ in range(4)
        ]
    finally:
        store.close()
    names = {Path(m["path"]).name for m in made}
    assert len(names) == 4  # distinct stamps (millisecond resolution)
    kept = portability.list_backups(settings.backups_dir)
    assert [str(p) for p in kept] == sorted((m["path"] for m in made[-2:]), reverse=True)
    assert made[-1]["pruned"] or made[-2]["pruned"]


def test_backup_failure_is_a_clear_507(client: TestClient, settings: Settings) -> None:
    settings.backups_dir.write_text("not a folder")
    r = client.post("/api/backup")
    assert r.status_code == 507
    assert "backup" in r.json()["error"]["message"]


_TABLES = ["projects", "sessions", "prompts", "observations", "memories", "kv", "embeddings", "x"]
_COLUMNS = ["id", "key", "name", "created_at", "session_id", "project_id", "text", "number",
            "kind", "content", "content_hash", "value", "updated_at", "vector", "title", "type"]  # fmt: skip
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.just({"$b64": "AAEC"}),
    st.just({"$b64": "%%%"}),
    st.lists(st.integers(), max_size=2),
)
_row_lines = st.builds(
    lambda table, row: json.dumps({"table": table, "row": row}),
    st.sampled_from(_TABLES),
    st.dictionaries(st.sampled_from(_COLUMNS), _values, max_size=6),
)
_lines = st.lists(
    st.one_of(_row_lines, st.text(max_size=30), st.just('{"table": 1}'), st.just("[[[[")),
    max_size=6,
)


@given(lines=_lines, mode=st.sampled_from(["fail", "skip", "replace"]))
@hyp_settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_any_import_input_is_imported_or_rejected_cleanly(
    settings: Settings, backend_store: Store | PgStore, lines: list[str], mode: Any
) -> None:
    store = backend_store
    header = _header(store)
    try:
        store.write_sync(
            lambda c: portability.import_lines(
                c, [header, *lines], check=row_check(settings), on_conflict=mode
            )
        )
    except (InvalidValue, RowConflict) as exc:
        assert exc.message.startswith(("line ", "the import would leave"))
    if isinstance(store, Store):  # PostgreSQL checks references at every statement
        assert store.read_sync(lambda c: c.execute("PRAGMA foreign_key_check").fetchall()) == []


def test_backup_while_another_connection_keeps_writing(settings: Settings) -> None:
    import threading

    store = Store(settings.db_path)
    store.open()
    writer = Store(settings.db_path)
    writer.open()
    stop = threading.Event()

    def keep_writing() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            writer.write_sync(
                lambda c, n=n: c.execute(
                    "INSERT INTO kv(key, value, updated_at) VALUES (?, 'x', 1)", (f"k{n}",)
                )
            )

    thread = threading.Thread(target=keep_writing)
    thread.start()
    try:
        store.write_sync(
            lambda c: c.executemany(
                "INSERT INTO kv(key, value, updated_at) VALUES (?, ?, 1)",
                [(f"bulk{i}", "v" * 500) for i in range(5000)],
            )
        )
        info = store.read_sync(lambda c: portability.backup(c, settings.backups_dir))
    finally:
        stop.set()
        thread.join()
        writer.close()
        store.close()
    copy = sqlite3.connect(info["path"])
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert copy.execute("SELECT COUNT(*) FROM kv WHERE key LIKE 'bulk%'").fetchone()[0] == 5000
    finally:
        copy.close()


def _chain(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO memories(id, project_id, kind, content, content_hash, created_at, "
        "updated_at) VALUES (10, 1, 'fact', 'c', 'c', 1, 1), "
        "(11, 1, 'fact', 'd', 'd', 1, 1), (12, 1, 'fact', 'e', 'e', 1, 1)"
    )
    for memory_id, by in ((1, 10), (11, 1), (12, 12)):
        conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", (by, memory_id))


def test_rows_never_point_forward_so_chunked_imports_work(
    client: TestClient, settings: Settings, second: tuple[TestClient, Settings]
) -> None:
    populate(client, settings)
    store = Store(settings.db_path)
    store.open()
    try:  # a supersession chain pointing both ways: 10 <- 1 <- 11, and 12 superseded by itself
        store.write_sync(_chain)
    finally:
        store.close()
    lines = _export_text(settings)
    memory_ids = [
        json.loads(line)["row"]["id"] for line in lines[1:] if '"table":"memories"' in line
    ]
    assert memory_ids.index(10) < memory_ids.index(1) < memory_ids.index(11)
    assert {10, 11, 12, 1} <= set(memory_ids) and len(memory_ids) == len(set(memory_ids))

    other_client, other = second
    for line in lines[1:]:  # the smallest chunks: one row per request
        r = other_client.post("/api/import", content=f"{lines[0]}\n{line}\n".encode())
        assert r.status_code == 201, r.text
    assert table_dump(other.db_path) == table_dump(settings.db_path)


@pytest.mark.postgres
def test_round_trip_sqlite_postgres_sqlite(
    client: TestClient, settings: Settings, pg_url: str, tmp_path: Path
) -> None:
    """A SQLite home exported, imported into PostgreSQL, exported from there and imported into
    a new SQLite home: the same rows at every step (ids kept), each import idempotent."""
    populate(client, settings)
    lines = _portable(_export_text(settings))
    team = PgStore(pg_url)
    team.open()
    try:
        first = _import_into(team, settings, lines)
        assert first.inserted == len(lines) - 1 and first.unchanged == 0
        again = _import_into(team, settings, lines)
        assert again.inserted == 0 and again.unchanged == len(lines) - 1
        # The keyword search's counters follow the imported rows: the writer filled their
        # analysed terms (an in-memory index built from the rows agrees).
        terms = ["limit", "rate", "deploy", "nginx"]
        index = KeywordIndex()
        team.read_sync(index.load)
        counted = team.read_sync(lambda c: DatabaseKeywords().frequencies(c, terms))
        assert counted == team.read_sync(lambda c: index.frequencies(c, terms))
        assert counted[1] == len(index_rows_of(lines)) and any(counted[0].values())
        out: list[str] = []
        team.read_sync(lambda c: portability.export_to(c, out.append, version="t", visible_to=None))
        from_pg = portability.split_lines("".join(out))
        # The keyword words PostgreSQL's writer fills were filled for the imported rows.
        found = team.read_sync(
            lambda c: c.execute(
                "SELECT COUNT(*) FROM observations "
                "WHERE search_vector @@ plainto_tsquery('english', 'limits')"
            ).fetchone()[0]
        )
        new_ids = team.write_sync(
            lambda c: c.insert(
                "INSERT INTO projects(key, name, created_at) VALUES ('k', 'k', 1)", ()
            )
        )
    finally:
        team.close()
    assert found == 1
    assert (
        new_ids
        > max(  # the identity sequence moved past the imported ids
            json.loads(line)["row"]["id"] for line in lines[1:] if '"table":"projects"' in line
        )
    )
    header = json.loads(from_pg[0])
    assert header["backend"] == "postgres" and header["rows"] == len(from_pg) - 1
    assert from_pg[1:] == lines[1:]

    back = load_settings(home=tmp_path / "back-home")
    home = Store(back.db_path)
    home.open()
    try:
        result = _import_into(home, back, from_pg)
        assert result.inserted == len(lines) - 1
        assert _import_into(home, back, from_pg).inserted == 0
        assert _dump(home) == lines[1:]
    finally:
        home.close()


@pytest.mark.postgres
def test_a_team_database_is_not_backed_up_by_cairn(pg_url: str, settings: Settings) -> None:
    team = PgStore(pg_url)
    team.open()
    try:
        with pytest.raises(InvalidValue) as err:
            team.read_sync(lambda c: portability.backup(c, settings.backups_dir))
    finally:
        team.close()
    assert "pg_dump" in err.value.message
    assert not settings.backups_dir.exists() or not list(settings.backups_dir.iterdir())
