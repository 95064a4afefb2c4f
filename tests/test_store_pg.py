"""What only the PostgreSQL store has: migrations under an advisory lock, a newer schema refused,
writes serialised across workers, a lost connection, secrets kept out of errors and logs, and
the keyword index's own analysis (identifiers split, English and Italian stems)."""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
import pytest

from worker.errors import ConfigError
from worker.store import memories, memory_vectors, observations, projects, sessions, summaries
from worker.store.errors import StoreFull, StoreUnavailable
from worker.store.pg import PgStore
from worker.store.pg.connection import to_psycopg
from worker.store.pg.migrations import MIGRATIONS, NewerSchema

pytestmark = pytest.mark.postgres

APP = "github.com/acme/app"
SECRET = "s3cret-Pa55"


def with_password(url: str) -> str:
    """The URL with a password (the test server trusts loopback, so any password connects)."""
    parts = urlsplit(url)
    netloc = f"{parts.username}:{SECRET}@{parts.hostname}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def opened(url: str) -> PgStore:
    store = PgStore(url)
    store.open()
    return store


def test_placeholders_become_psycopgs_outside_string_literals() -> None:
    assert to_psycopg("SELECT ? WHERE a = ?") == "SELECT %s WHERE a = %s"
    assert to_psycopg("SELECT '?', 'it''s ?', ? LIKE '5%'") == (
        "SELECT '?', 'it''s ?', %s LIKE '5%%'"
    )
    assert to_psycopg("SELECT 1") == "SELECT 1"


def test_a_new_database_is_migrated_once_and_recorded(pg_url: str) -> None:
    store = opened(pg_url)
    store.close()
    assert store.migrations_applied == [v for v, _, _ in MIGRATIONS]
    again = opened(pg_url)
    again.close()
    assert again.migrations_applied == []
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY 1").fetchall()
    assert rows == [(v, name) for v, name, _ in MIGRATIONS]


def test_workers_starting_together_migrate_once(pg_url: str) -> None:
    workers = 4
    barrier = threading.Barrier(workers)
    stores: list[PgStore] = []
    errors: list[BaseException] = []

    def start() -> None:
        store = PgStore(pg_url)
        barrier.wait()
        try:
            store.open()
            stores.append(store)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    applied = sorted((s.migrations_applied for s in stores), key=len)
    assert applied == [[]] * (workers - 1) + [[v for v, _, _ in MIGRATIONS]]
    for store in stores:
        store.close()


def test_a_schema_from_a_newer_cairn_is_refused_with_what_to_do(pg_url: str) -> None:
    opened(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 0)"
        )
    store = PgStore(with_password(pg_url))
    with pytest.raises(ConfigError) as raised:
        store.open()
    assert isinstance(raised.value, NewerSchema)
    message = str(raised.value)
    assert "schema version 999, from a newer Cairn" in message and "upgrade Cairn" in message
    assert SECRET not in message and ":***@" in message


def test_an_unreachable_database_is_unavailable_and_its_password_never_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    url = f"postgresql://ann:{SECRET}@127.0.0.1:{port}/cairn?connect_timeout=2"
    caplog.set_level(logging.DEBUG)
    store = PgStore(url)
    with pytest.raises(StoreUnavailable) as raised:
        store.open()
    assert "unreachable" in str(raised.value)
    assert SECRET not in str(raised.value) and SECRET not in repr(store)
    assert "postgresql://ann:***@127.0.0.1" in str(raised.value)
    assert SECRET not in caplog.text


def test_writes_of_two_workers_are_serialised(pg_url: str) -> None:
    # Each write reads (is this content stored?) and then inserts or counts a repeat: without
    # the cross-worker write lock two workers would both insert.
    first, second = opened(pg_url), opened(pg_url)
    barrier = threading.Barrier(8)

    def save(store: PgStore) -> None:
        barrier.wait()
        store.write_sync(
            lambda c: memories.insert(c, {"content": "One fact", "kind": "fact", "project": APP})
        )

    threads = [threading.Thread(target=save, args=(s,)) for s in [first, second] * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = first.read_sync(lambda c: c.execute("SELECT hit_count FROM memories").fetchall())
    assert [r[0] for r in rows] == [7]
    assert (
        first.read_sync(lambda c: c.execute("SELECT COUNT(*) FROM projects").fetchall()[0][0]) == 1
    )
    first.close()
    second.close()


def test_a_connection_lost_mid_write_keeps_nothing_and_the_next_write_works(
    pg_url: str,
) -> None:
    store = opened(pg_url)

    def write_then_lose_connection(c: Any) -> None:
        memories.insert(c, {"content": "Half written", "kind": "fact", "project": APP})
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        c.execute("SELECT 1")  # the server is gone: this fails

    with pytest.raises(StoreUnavailable, match="connection was lost"):
        store.write_sync(write_then_lose_connection)
    _row, created = store.write_sync(
        lambda c: memories.insert(c, {"content": "Whole", "kind": "fact", "project": APP})
    )
    assert created
    contents = store.read_sync(lambda c: [r[0] for r in c.execute("SELECT content FROM memories")])
    assert contents == ["Whole"]
    store.close()


def test_reads_run_in_read_only_transactions(pg_url: str) -> None:
    # As SQLite's readers (query_only): a write there is refused, as on a read-only server.
    store = opened(pg_url)
    with pytest.raises(StoreFull, match="is read-only: cannot execute INSERT"):
        store.read_sync(lambda c: projects.ensure(c, APP))
    assert store.read_sync(lambda c: projects.find(c, APP)) is None
    store.close()


def test_the_keyword_index_splits_identifiers_and_stems_english_and_italian(
    pg_url: str,
) -> None:
    store = opened(pg_url)

    def save(content: str, **fields: Any) -> int:
        row, _ = store.write_sync(
            lambda c: memories.insert(
                c, {"content": content, "kind": "fact", "project": APP, **fields}
            )
        )
        return int(row["id"])

    code = save("getUserById returns null for deleted accounts")
    italian = save("Le migrazioni del database girano di notte")
    tagged = save("Payments retry twice", tags=["stripeWebhook"])
    pid = store.read_sync(lambda c: projects.find(c, APP))

    def found(*words: str) -> list[int]:
        rows = store.read_sync(
            lambda c: memories.text_candidates(c, pid, list(words), exclude_id=0)
        )
        return [int(r["id"]) for r in rows]

    assert found("user") == [code]  # a part of the identifier
    assert found("getUserById") == [code] and found("get_user_by_id") == [code]
    assert found("account") == [code]  # English stem
    assert found("migrazione") == [italian]  # Italian stem
    assert found("webhook") == [tagged]  # a tag word the text lacks is indexed
    store.write_sync(lambda c: memories.update(c, code, {"content": "fetchOrder is slow"}))
    assert found("user") == [] and found("order") == [code]  # the index follows an edit


def test_an_hnsw_scan_filtered_by_scope_still_finds_the_scopes_vectors(pg_url: str) -> None:
    store = opened(pg_url)
    if not store.native_vectors:
        store.close()
        pytest.skip("this PostgreSQL has no pgvector")
    rng = np.random.default_rng(3)
    query = rng.normal(size=8).astype(np.float32)

    def fill(c: Any) -> tuple[int, list[int]]:
        # 80 memories of another project right next to the query (more than the 40 candidates
        # an HNSW scan gathers by default), and 3 of ours further away.
        crowd = projects.ensure(c, "github.com/acme/crowd")
        for n in range(80):
            row, _ = memories.insert(
                c, {"content": f"crowd {n}", "kind": "fact", "project": "github.com/acme/crowd"}
            )
            near = query + rng.normal(size=8).astype(np.float32) * 0.01
            memory_vectors.save(c, row["id"], crowd, "m", near)
        ours = projects.ensure(c, APP)
        ids = []
        for n in range(3):
            row, _ = memories.insert(c, {"content": f"ours {n}", "kind": "fact", "project": APP})
            memory_vectors.save(c, row["id"], ours, "m", rng.normal(size=8).astype(np.float32))
            ids.append(int(row["id"]))
        return ours, ids

    ours, ids = store.write_sync(fill)

    def nearest_by_index(c: Any) -> list[int]:
        c.execute("SET LOCAL enable_seqscan = off")  # the HNSW index, as on a large table
        plan = " ".join(
            str(r[0])
            for r in c.execute(
                "EXPLAIN SELECT item_id FROM embeddings e "
                "WHERE e.dim = 8 AND e.embedding IS NOT NULL ORDER BY "
                "(e.embedding::vector(8)) <=> ?::vector(8) LIMIT 3",
                ("[" + ",".join(["0"] * 7 + ["1"]) + "]",),
            )
        )
        assert "embeddings_hnsw_8" in plan
        return [i for i, _ in memory_vectors.nearest(c, "m", query, ours, limit=3)]

    assert sorted(store.read_sync(nearest_by_index)) == sorted(ids)
    store.close()


def test_a_prompts_words_are_indexed_as_split_and_stemmed(pg_url: str) -> None:
    store = opened(pg_url)
    try:

        def write(conn: Any) -> None:
            pid = projects.ensure(conn, APP)
            sessions.ensure(conn, "s-1", pid)
            sessions.add_prompt(conn, "s-1", pid, "Why does parseConfigFiles fail?", None)

        store.write_sync(write)
        match = (
            "SELECT count(*) FROM prompts WHERE search_vector @@ "
            "(plainto_tsquery('english', ?) || plainto_tsquery('italian', ?))"
        )

        def hits(word: str) -> int:
            return int(store.read_sync(lambda c: c.execute(match, (word, word)).fetchall()[0][0]))

        found = {word: hits(word) for word in ("config", "files", "failing", "yaml")}
        assert found == {"config": 1, "files": 1, "failing": 1, "yaml": 0}
    finally:
        store.close()


def test_an_observations_files_and_words_are_indexed_by_the_database(pg_url: str) -> None:
    """The file_writes trigger (SQLite's m002) and the writer-filled keyword columns."""
    store = opened(pg_url)
    try:
        item = {
            "project": APP,
            "type": "file_write",
            "title": "Edit parseConfigFiles",
            "body": "handles missing keys",
            "files": ["src/config.py", "README.md"],
        }
        row, _ = store.write_sync(lambda c: observations.insert(c, item))
        files = store.read_sync(
            lambda c: [r[0] for r in c.execute("SELECT file FROM file_writes ORDER BY file")]
        )
        assert files == ["README.md", "src/config.py"]
        match = (
            "SELECT ts_rank(search_vector, q) FROM observations, "
            "(SELECT plainto_tsquery('english', ?) || plainto_tsquery('italian', ?) AS q) x "
            "WHERE search_vector @@ q"
        )

        def rank(word: str) -> float | None:
            rows = store.read_sync(lambda c: c.execute(match, (word, word)).fetchall())
            return float(rows[0][0]) if rows else None

        title, body, missing = rank("parse"), rank("keys"), rank("yaml")
        assert title is not None and body is not None and missing is None
        assert title > body  # the title weighs more, as its own column does on SQLite
        store.write_sync(lambda c: c.execute("DELETE FROM observations WHERE id = ?", (row["id"],)))
        left = store.read_sync(lambda c: c.execute("SELECT file FROM file_writes").fetchall())
        assert left == []
    finally:
        store.close()


def test_a_summarys_words_are_indexed_and_rewritten_with_it(pg_url: str) -> None:
    store = opened(pg_url)
    try:

        def write(conn: Any, request: str) -> None:
            pid = projects.ensure(conn, APP)
            sessions.ensure(conn, "s-1", pid)
            summaries.upsert(
                conn, "s-1", pid, request=request, completed=["wrote getUserById"],
                files=[], learned=[], next_steps=[],
            )  # fmt: skip

        match = (
            "SELECT count(*) FROM summaries WHERE search_vector @@ "
            "(plainto_tsquery('english', ?) || plainto_tsquery('italian', ?))"
        )

        def hits(word: str) -> int:
            return int(store.read_sync(lambda c: c.execute(match, (word, word)).fetchall()[0][0]))

        store.write_sync(lambda c: write(c, "Fix the login"))
        assert (hits("login"), hits("user"), hits("logout")) == (1, 1, 0)
        store.write_sync(lambda c: write(c, "Fix the logout"))
        assert (hits("login"), hits("logout")) == (0, 1)
    finally:
        store.close()
