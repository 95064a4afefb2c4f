"""The team database setting: read from the environment or config.json, shown only redacted, and
refused only when this installation lacks the PostgreSQL driver."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tests.examples import examples
from worker.errors import ConfigError
from worker.team import check_team_database, database_url, redact


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://alice:s3cret@db.example:5432/cairn", "postgresql://alice:***@db.example:5432/cairn"),
        ("postgres://alice@db/cairn?sslmode=require", "postgres://alice@db/cairn?sslmode=require"),
        ("postgresql://db/cairn?user=bob&password=s3cret&sslmode=verify-full",
         "postgresql://db/cairn?user=bob&password=***&sslmode=verify-full"),
        ("postgresql://alice:p@ss@db/cairn", "postgresql://alice:***@db/cairn"),
        ("postgresql://alice:s3cret@db?sslmode=require", "postgresql://alice:***@db?sslmode=require"),
        ("host=db dbname=cairn password='s3 cret' sslmode=require",
         "host=db dbname=cairn password=*** sslmode=require"),
        ("host=db PASSWORD = s3cret", "host=db PASSWORD = ***"),
        ("postgresql:///cairn?host=/var/run/postgresql", "postgresql:///cairn?host=/var/run/postgresql"),
    ],
)  # fmt: skip
def test_redact_masks_every_password_form(url: str, shown: str) -> None:
    assert redact(url) == shown


_TEXT = "abcdefghijklmnopqrstuvwxyz0123456789"


@hsettings(max_examples=examples(200))
@given(
    user=st.text(_TEXT, min_size=1, max_size=10),
    password=st.text(_TEXT + "!$%^*()-_+[]{}|'", min_size=1, max_size=20).map(lambda s: f"~{s}~"),
    host=st.text(_TEXT + ".-", min_size=1, max_size=20),
    query=st.sampled_from(["", "?sslmode=require", "?application_name=cairn&sslmode=disable"]),
)
def test_a_password_never_survives_redaction(
    user: str, password: str, host: str, query: str
) -> None:
    for url in (
        f"postgresql://{user}:{password}@{host}/cairn{query}",
        f"postgresql://{host}/cairn?user={user}&password={password}",
    ):
        shown = redact(url)
        assert "~" not in shown  # the password's marker
        assert host in shown and "***" in shown


def test_the_url_comes_from_the_environment_then_config_json(tmp_path: Path) -> None:
    assert database_url(tmp_path, {}) == ""
    (tmp_path / "config.json").write_text("{not json")
    assert database_url(tmp_path, {}) == ""
    (tmp_path / "config.json").write_text(json.dumps({"database_url": " postgresql://c/x "}))
    assert database_url(tmp_path, {}) == "postgresql://c/x"
    assert database_url(tmp_path, {"CAIRN_DATABASE_URL": "postgresql://e/x"}) == "postgresql://e/x"
    (tmp_path / "config.json").write_text(json.dumps({"database_url": ["not", "a", "string"]}))
    assert database_url(tmp_path, {}) == ""


def test_a_team_database_without_the_driver_is_refused_naming_where_it_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_team_database(tmp_path, {})  # none configured: nothing to check
    url = {"CAIRN_DATABASE_URL": "postgresql://al:s3cret@db/cairn"}
    check_team_database(tmp_path, url)  # the driver is installed here: nothing to refuse
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "psycopg" else real_find_spec(name, *a),
    )
    with pytest.raises(ConfigError) as caught:
        check_team_database(tmp_path, url)
    message = str(caught.value)
    assert "CAIRN_DATABASE_URL" in message and "postgresql://al:***@db/cairn" in message
    assert ".[team]" in message and "s3cret" not in message
