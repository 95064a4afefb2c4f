"""Settings: one place for defaults, CAIRN_* environment overrides, refusal of bad values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from worker.errors import ConfigError
from worker.settings import ENV_NAMES, FLAT_NAMES, Settings, load_settings


def test_defaults_match_the_issue() -> None:
    s = load_settings({})
    assert s.server.port == 37800 and s.server.host == "127.0.0.1"
    assert s.limits.max_body_bytes == 1024 * 1024
    assert s.home == Path.home() / ".cairn"
    assert s.db_path == s.home / "cairn.db" and s.token_path == s.home / "token"


def test_every_field_is_settable_from_its_env_var(tmp_path: Path) -> None:
    defaults = Settings()
    assert len(FLAT_NAMES) == len(ENV_NAMES) > 100  # every leaf of every group, none twice
    for name in FLAT_NAMES:
        value = defaults.value(name)
        if isinstance(value, bool):
            raw, expected = ("0", False) if value else ("1", True)
        elif isinstance(value, int):
            raw, expected = str(value + 1), value + 1
        elif isinstance(value, float):
            raw, expected = str(value + 0.5), value + 0.5
        elif isinstance(value, Path):
            raw, expected = str(tmp_path), tmp_path
        elif name.startswith("rate_limit"):
            raw, expected = "7/second", "7/second"
        elif name == "host":
            raw, expected = "::1", "::1"
        else:
            continue  # free-form strings (model names, lists) are checked by their owners
        if name == "port":
            raw, expected = "4242", 4242
        loaded = load_settings({f"CAIRN_{name.upper()}": raw})
        assert loaded.value(name) == expected, name


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        ("CAIRN_PORT", "eighty", "not a valid int"),
        ("CAIRN_PORT", "70000", "outside 0..65535"),
        ("CAIRN_EMBED_ENABLED", "maybe", "not a valid bool"),
        ("CAIRN_MAX_BODY_BYTES", "-1", ">= 0"),
        ("CAIRN_SSE_PING_SECONDS", "nan", "finite"),
        ("CAIRN_SSE_PING_SECONDS", "inf", "finite"),
        ("CAIRN_RATE_LIMIT_WRITE", "lots", "not a rate limit"),
        ("CAIRN_HOST", "0.0.0.0", "loopback only"),
        ("CAIRN_HOST", "192.168.1.5", "loopback only"),
        ("CAIRN_GROUP_COMMIT_DELAY_MS", "51", "over 50 ms"),
        ("CAIRN_GROUP_COMMIT_DELAY_MS", "-0.5", ">= 0"),
    ],
)
def test_bad_values_are_refused_at_load_with_the_variable_named(
    key: str, raw: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_settings({key: raw})
    assert key in str(info.value)


def test_overrides_beat_the_environment_and_none_means_unset() -> None:
    s = load_settings({"CAIRN_PORT": "5000"}, port=6000)
    assert s.server.port == 6000
    assert load_settings({"CAIRN_PORT": "5000"}, port=None).server.port == 5000


def test_home_expands_the_user() -> None:
    assert load_settings({"CAIRN_HOME": "~/elsewhere"}).home == Path.home() / "elsewhere"


def test_public_dict_is_json_ready() -> None:
    import json

    data = load_settings({}).public_dict()
    assert json.loads(json.dumps(data))["port"] == 37800


def test_flat_names_reach_the_grouped_fields() -> None:
    s = load_settings({"CAIRN_SEARCH_DEFAULT_LIMIT": "5"}, prompt_relative_floor=0.5)
    assert s.search.default_limit == 5 and s.judgment.prompt_relative_floor == 0.5
    assert s.lifecycle.obs_half_life_days.file_write == 21.0
    assert (
        load_settings({"CAIRN_OBS_HALF_LIFE_DAYS_WEB": "6"}).lifecycle.obs_half_life_days.web == 6
    )
    assert Settings.from_flat(**Settings().flat()) == Settings()
    changed = s.with_flat(max_tags=3)
    assert changed.limits.max_tags == 3 and changed.search.default_limit == 5
    assert s.limits.max_tags == 20  # a copy: the original is unchanged
    with pytest.raises(TypeError, match="unknown settings: max_tag"):
        Settings.from_flat(max_tag=3)


def test_every_variable_is_in_the_docs_and_every_one_there_exists() -> None:
    """The Configuration table (docs/configuration.md) names each variable in full (a `..._<TYPE>`
    row names its types in the defaults column), and names no variable the code no longer reads."""
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `CAIRN_")]
    assert rows, "docs/configuration.md has no Configuration table"

    def documented(env: str) -> bool:
        for row in rows:
            if f"`{env}`" in row:
                return True
            prefix = row.split("`")[1].removesuffix("<TYPE>")
            if row.startswith(f"| `{prefix}<TYPE>`") and env.startswith(prefix):
                return f"{env.removeprefix(prefix).lower()} `" in row
        return False

    assert [env for env in ENV_NAMES.values() if not documented(env)] == []
    named = {n for row in rows for n in re.findall(r"`(CAIRN_[A-Z_]+[A-Z])`", row.split(" | ")[0])}
    sources = "".join(p.read_text(encoding="utf-8") for p in (root / "hooks").glob("*.py"))
    stale = [n for n in named if n not in ENV_NAMES.values() and f'"{n}"' not in sources]
    assert stale == [], "docs/configuration.md names variables nothing reads"
