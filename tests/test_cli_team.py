"""`cairn team join|leave|status` (worker/cli/team.py) against a real throwaway PostgreSQL server."""

from __future__ import annotations

import io
import json
import socket
import stat

import psycopg
import pytest

from worker.cli import main
from worker.settings import Settings


def _config(settings: Settings) -> dict[str, object]:
    return dict(json.loads((settings.home / "config.json").read_text()))


@pytest.mark.postgres
def test_join_checks_the_database_then_saves_it_privately_keeping_other_keys(
    settings: Settings, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "config.json").write_text(json.dumps({"autostart": False}))
    assert main(["team", "join", pg_url]) == 0
    out = capsys.readouterr().out
    assert "joined the team database" in out and "vectors:" in out and "restart" in out
    assert _config(settings) == {"autostart": False, "database_url": pg_url}
    assert stat.S_IMODE((settings.home / "config.json").stat().st_mode) == 0o600
    with psycopg.connect(pg_url) as conn:  # the schema is there: the worker will not migrate
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] > 0
    assert main(["team", "status"]) == 0
    assert "team database" in capsys.readouterr().out
    assert main(["team", "leave"]) == 0
    assert "left the team database" in capsys.readouterr().out
    assert _config(settings) == {"autostart": False}
    assert main(["team", "status"]) == 0
    assert "no team database" in capsys.readouterr().out


@pytest.mark.postgres
def test_join_reads_the_url_from_stdin_and_never_prints_the_password(
    settings: Settings,
    pg_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The test server trusts loopback: any password is accepted, and must never be shown.
    with_password = pg_url.replace("://postgres@", "://postgres:hunter2@", 1)
    assert "hunter2" in with_password
    monkeypatch.setattr("sys.stdin", io.StringIO(with_password + "\n"))
    assert main(["team", "join", "-"]) == 0
    captured = capsys.readouterr()
    assert "hunter2" not in captured.out + captured.err
    assert _config(settings)["database_url"] == with_password


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_database_saves_nothing(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://ann:s3cret@127.0.0.1:{_closed_port()}/team?connect_timeout=3"
    assert main(["team", "join", url]) == 1
    err = capsys.readouterr().err
    assert "cannot use the team database" in err and "nothing was saved" in err
    assert "s3cret" not in err
    assert not (settings.home / "config.json").exists()


@pytest.mark.parametrize("url", ["mysql://db/team", "db.example.com", ""])
def test_a_url_that_is_not_postgresql_is_a_configuration_error(
    url: str, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["team", "join", url]) == 2
    assert "PostgreSQL URL" in capsys.readouterr().err
    assert not (settings.home / "config.json").exists()


def test_a_config_file_that_is_not_an_object_is_not_overwritten(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "config.json").write_text("[1, 2]")
    assert main(["team", "leave"]) == 2
    assert "JSON object" in capsys.readouterr().err
    assert (settings.home / "config.json").read_text() == "[1, 2]"
