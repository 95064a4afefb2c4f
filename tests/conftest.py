"""Shared fixtures: every test gets a tmp CAIRN_HOME and a tmp HOME (never the real ~/.claude)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from worker.app import create_app
from worker.settings import Settings, load_settings
from worker.store import Store

BASE_URL = "http://127.0.0.1:37800"


@pytest.fixture(scope="session")
def shared_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One models folder for the whole run: the int8 model is built once, not per home."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_models: Path) -> Path:
    home = tmp_path / "cairn-home"
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    monkeypatch.setenv("CAIRN_HOME", str(home))
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("CAIRN_EMBED_ENABLED", os.environ.get("CAIRN_TEST_EMBED", "0"))
    for key in list(os.environ):
        if key.startswith("CAIRN_") and key not in ("CAIRN_HOME", "CAIRN_EMBED_ENABLED"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CAIRN_MODELS_DIR", str(shared_models))
    return home


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Put the root logger back after a test that configures logging (to a file in tmp)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers:
        handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def user_home(isolated_home: Path) -> Path:
    """The tmp HOME the autouse fixture set (where ~/.claude, ~/.cursor ... live in tests)."""
    return Path(os.environ["HOME"])


@pytest.fixture
def project_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tmp project folder made the current directory (for --project and cwd-based code)."""
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    return load_settings()


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """An authenticated TestClient over a fresh app (lifespan runs inside `with`)."""
    app = create_app(settings)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as test_client:
        token = settings.token_path.read_text().strip()
        test_client.headers["Authorization"] = f"Bearer {token}"
        yield test_client


@pytest.fixture
def anon_client(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def store(settings: Settings) -> Iterator[Store]:
    """An open Store on the test's database file (closed afterwards)."""
    opened = Store(settings.db_path)
    opened.open()
    yield opened
    opened.close()
