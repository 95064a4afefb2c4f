"""The throwaway PostgreSQL server of tests/pg.py, on every installation found here."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import psycopg
import pytest

from tests import pg

pytestmark = pytest.mark.postgres

FOUND = pg.find_binaries()


@pytest.mark.parametrize("binaries", FOUND or [None], ids=[b.source for b in FOUND] or ["none"])
def test_each_installation_starts_a_private_server_that_stop_removes(
    binaries: pg.Binaries | None,
) -> None:
    if binaries is None:
        pytest.skip(pg.SKIP_REASON)
    server = pg.started(binaries)
    try:
        with psycopg.connect(server.url("postgres")) as conn:
            version = conn.execute("SHOW server_version").fetchone()
            assert version is not None and str(version[0]).startswith(binaries.version)
            listen = conn.execute("SHOW listen_addresses").fetchone()
            assert listen == ("127.0.0.1",)
            # The two languages the keyword index analyses have full-text configurations.
            configs = {r[0] for r in conn.execute("SELECT cfgname FROM pg_ts_config")}
            assert {"english", "italian"} <= configs
            vector = conn.execute(
                "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            assert vector == (1 if binaries.has_pgvector else 0,)
            if binaries.has_pgvector:
                conn.execute("CREATE EXTENSION vector")
                distance = conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
                assert distance == (1.0,)
        if os.geteuid() == 0:  # initdb and postgres refuse root: the server runs as another user
            assert server.user is not None and server.user.pw_uid != 0
            assert server.data.stat().st_uid == server.user.pw_uid
        port, root = server.port, server.root
    finally:
        server.stop()
    assert not root.exists()
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0  # nothing listens there any more


def test_each_test_gets_a_new_empty_database_that_is_dropped_after(
    postgres_server: pg.PostgresServer,
) -> None:
    with postgres_server.database() as first, postgres_server.database() as second:
        assert first != second
        with psycopg.connect(first) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (1)")
        with psycopg.connect(second) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
            assert tables == (0,)
    names = (first.rsplit("/", 1)[1], second.rsplit("/", 1)[1])
    with psycopg.connect(postgres_server.url("postgres")) as admin:
        left = admin.execute(
            "SELECT count(*) FROM pg_database WHERE datname = ANY(%s)", (list(names),)
        ).fetchone()
    assert left == (0,)


def test_the_pg_url_fixture_is_a_live_database(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT current_database()").fetchone()
    assert row is not None and pg_url.endswith("/" + row[0])


def test_installations_are_found_in_the_documented_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if not FOUND:
        pytest.skip(pg.SKIP_REASON)
    # CAIRN_TEST_PG_BIN comes first; the same folder found twice is listed once.
    monkeypatch.setenv("CAIRN_TEST_PG_BIN", str(FOUND[-1].bindir))
    again = pg.find_binaries()
    assert again[0].source == "CAIRN_TEST_PG_BIN"
    assert again[0].bindir == FOUND[-1].bindir
    assert len(again) == len(FOUND)
    # A folder without the server binaries is no installation.
    monkeypatch.setenv("CAIRN_TEST_PG_BIN", str(tmp_path))
    assert [b.source for b in pg.find_binaries()] == [b.source for b in FOUND]


def test_a_restart_cuts_every_connection_and_keeps_the_data_and_the_port() -> None:
    """What the database-restart fault test (e2e/test_team_faults.py) relies on."""
    if not FOUND:
        pytest.skip(pg.SKIP_REASON)
    server = pg.started(FOUND[0])
    try:
        port = server.port
        client = psycopg.connect(server.url("postgres"), autocommit=True)
        client.execute("CREATE TABLE kept (x int)")
        client.execute("INSERT INTO kept VALUES (7)")
        server.restart()
        assert server.port == port
        with pytest.raises(psycopg.OperationalError):
            client.execute("SELECT 1")  # ended by the fast shutdown
        client.close()
        with psycopg.connect(server.url("postgres")) as conn:
            assert conn.execute("SELECT x FROM kept").fetchall() == [(7,)]
    finally:
        server.stop()
