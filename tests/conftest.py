"""Shared fixtures: every test gets a tmp CAIRN_HOME and a tmp HOME (never the real ~/.claude)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings as hypothesis_settings
from starlette.testclient import TestClient

from tests.backends import opened_store
from worker.app import create_app
from worker.home import ensure_private_dir, private_opener
from worker.settings import Settings, load_settings
from worker.store import Store

if TYPE_CHECKING:
    from tests.pg import PostgresServer
    from worker.store.backend import Backend
    from worker.store.pg import PgStore

BASE_URL = "http://127.0.0.1:37800"

# `--hypothesis-profile=fast` (make test-fast): property tests run a fifth of their examples.
hypothesis_settings.register_profile("fast", max_examples=20)


@pytest.fixture(scope="session")
def shared_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One models folder for the whole run: the int8 model is built once, not per home."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One database file migrated to the latest schema, built once per run by the real Store."""
    path = tmp_path_factory.mktemp("template") / "cairn.db"
    template = Store(path)
    template.open()
    template.close()  # the last connection checkpoints: the whole schema is in the main file
    return path


@pytest.fixture(autouse=True)
def seeded_databases(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, migrated_template: Path
) -> None:
    """A Store opened on a new file starts from a copy of the migrated template.

    Migrating a new file costs ~170 statements (~40 ms); a copy costs well under 1 ms. The file
    is still a real SQLite database with the real schema and its schema_migrations rows. Tests
    of the migrations themselves are marked `migrations` and run every step on a new file.
    """
    if request.node.get_closest_marker("migrations") is not None:
        return
    real_open = Store.open

    def open_from_template(store: Store) -> None:
        path = store.path
        if not path.exists() and not path.with_name(path.name + "-wal").exists():
            copy_template(migrated_template, path)
        real_open(store)

    monkeypatch.setattr(Store, "open", open_from_template)


def copy_template(template: Path, path: Path) -> None:
    ensure_private_dir(path.parent)
    with open(template, "rb") as src, open(path, "xb", opener=private_opener) as dst:
        shutil.copyfileobj(src, dst)


def isolate(root: Path, monkeypatch: pytest.MonkeyPatch, shared_models: Path) -> Path:
    """Point CAIRN_HOME and HOME into `root` and drop every other CAIRN_ setting."""
    home = root / "cairn-home"
    user_home = root / "user-home"
    user_home.mkdir()
    monkeypatch.setenv("CAIRN_HOME", str(home))
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("CAIRN_EMBED_ENABLED", os.environ.get("CAIRN_TEST_EMBED", "0"))
    for key in list(os.environ):
        if key.startswith("CAIRN_") and key not in ("CAIRN_HOME", "CAIRN_EMBED_ENABLED"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CAIRN_MODELS_DIR", str(shared_models))
    return home


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_models: Path) -> Path:
    return isolate(tmp_path, monkeypatch, shared_models)


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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests of a module marked `both_backends` run once per store backend: the same test, first
    on a SQLite file, then on a new database of the run's PostgreSQL server (the team backend).

    A test of such a module that is about SQLite itself (its file, WAL, disk faults) says so with
    `@pytest.mark.sqlite_only(reason)` and runs once.

    Only a test that uses the `backend` fixture (itself or through its fixtures) can be
    parametrised; one that does not would run on SQLite alone while its module claims both, so
    it is a collection error.
    """
    if metafunc.definition.get_closest_marker("both_backends") is None:
        return
    if metafunc.definition.get_closest_marker("sqlite_only") is not None:
        return
    if {"backend_store", "vector_store"} & set(metafunc.fixturenames):
        return  # those fixtures already run the test once per backend: not twice more
    if "backend" not in metafunc.fixturenames:
        if any(mark.name == "postgres" for mark in metafunc.definition.own_markers):
            return  # about PostgreSQL itself (e.g. its own server shut down): never SQLite only
        pytest.fail(
            f"{metafunc.definition.nodeid} is in a both_backends module but uses no `backend` "
            "fixture (itself or through its fixtures), so it would run on SQLite only: make its "
            "fixtures depend on `backend`, or mark it @pytest.mark.sqlite_only(reason)",
            pytrace=False,
        )
    metafunc.parametrize(
        "backend",
        ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
        indirect=True,
    )


@pytest.fixture
def backend(
    request: pytest.FixtureRequest, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The store backend of the test's apps and `store`: 'sqlite' unless parametrised; on
    'postgres', CAIRN_DATABASE_URL names a new database of the run's server."""
    name = str(getattr(request, "param", "sqlite"))
    if name == "postgres":
        monkeypatch.setenv("CAIRN_DATABASE_URL", request.getfixturevalue("pg_url"))
    return name


@pytest.fixture
def settings(isolated_home: Path, backend: str) -> Settings:
    return load_settings()


@contextlib.contextmanager
def running_app(settings: Settings, *, authenticated: bool) -> Iterator[TestClient]:
    """A TestClient over a fresh app (lifespan runs inside `with`), with the token if asked."""
    app = create_app(settings)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as test_client:
        if authenticated:
            token = settings.token_path.read_text().strip()
            test_client.headers["Authorization"] = f"Bearer {token}"
        yield test_client


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """An authenticated TestClient over a fresh app (lifespan runs inside `with`)."""
    with running_app(settings, authenticated=True) as test_client:
        yield test_client


@pytest.fixture
def anon_client(settings: Settings) -> Iterator[TestClient]:
    with running_app(settings, authenticated=False) as test_client:
        yield test_client


class ModuleApps:
    """Apps a module's tests share, per backend, each in a tmp home of its own (see module_clients)."""

    def __init__(
        self,
        stack: contextlib.ExitStack,
        tmp_path_factory: pytest.TempPathFactory,
        shared_models: Path,
        migrated_template: Path,
    ) -> None:
        self.stack = stack
        self.tmp_path_factory = tmp_path_factory
        self.shared_models = shared_models
        self.migrated_template = migrated_template
        self.started: dict[str, tuple[TestClient, TestClient]] = {}

    def start(self, database_url: str | None) -> tuple[TestClient, TestClient]:
        clients = []
        for authenticated in (True, False):
            # The environment is isolated while the app starts (its settings and database are
            # read then); undone at once, so nothing of it outlives the test that started it.
            with pytest.MonkeyPatch.context() as monkeypatch:
                root = self.tmp_path_factory.mktemp("module-app")
                isolate(root, monkeypatch, self.shared_models)
                if database_url is not None:
                    monkeypatch.setenv("CAIRN_DATABASE_URL", database_url)
                settings = load_settings()
                copy_template(self.migrated_template, settings.db_path)
                app = running_app(settings, authenticated=authenticated)
                clients.append(self.stack.enter_context(app))
        return clients[0], clients[1]


@pytest.fixture(scope="module")
def module_apps(
    tmp_path_factory: pytest.TempPathFactory, shared_models: Path, migrated_template: Path
) -> Iterator[ModuleApps]:
    with contextlib.ExitStack() as stack:
        yield ModuleApps(stack, tmp_path_factory, shared_models, migrated_template)


@pytest.fixture
def module_clients(
    request: pytest.FixtureRequest, backend: str, module_apps: ModuleApps
) -> tuple[TestClient, TestClient]:
    """An authenticated TestClient and one without the token, each over an app that the
    module's tests on this backend share (on postgres, over one database of the run's server
    for the module).

    Only for tests whose requests change nothing the others could see (e.g. requests the
    security middleware refuses before any handler runs): starting an app costs ~15-20 ms of CPU,
    which for a module of hundreds of such tests is most of its time.
    """
    if backend not in module_apps.started:
        url = None
        if backend == "postgres":
            server = request.getfixturevalue("postgres_server")
            url = module_apps.stack.enter_context(server.database())
        module_apps.started[backend] = module_apps.start(url)
    return module_apps.started[backend]


@pytest.fixture
def store(settings: Settings) -> Iterator[Backend]:
    """An open store on the test's database (closed afterwards): its SQLite file, or on the
    `postgres` backend the same team database the test's app uses."""
    with opened_store(settings) as opened:
        yield opened


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server for the run (tests/pg.py); skips when none is installed."""
    from tests import pg

    with pg.throwaway_server() as server:
        yield server


@pytest.fixture
def pg_url(request: pytest.FixtureRequest, postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty database on the run's server, dropped after the test."""
    if request.node.get_closest_marker("postgres") is None:
        pytest.fail("a test using a PostgreSQL server is marked @pytest.mark.postgres")
    with postgres_server.database() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_server_without_pgvector() -> Iterator[PostgresServer]:
    """A second throwaway server, of an installation without pgvector (Debian's): the store's
    fallback, vectors compared by the worker. Skips when every installation has pgvector."""
    from tests import pg

    plain = [b for b in pg.find_binaries() if not b.has_pgvector]
    if not plain:
        pytest.skip("no PostgreSQL installation without pgvector (Debian's `postgresql`)")
    server = pg.started(plain[0])
    try:
        yield server
    finally:
        server.stop()


def _opened_pg_store(url: str) -> PgStore:
    from worker.store.pg import PgStore

    opened = PgStore(url)
    opened.open()
    return opened


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend_store(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Store | PgStore]:
    """An open store of each backend, for the store modules ported to both (store/db.py): a
    SQLite file in the test's home, or a new database on the run's PostgreSQL server."""
    opened: Store | PgStore
    if request.param == "sqlite":
        opened = Store(settings.db_path)
        opened.open()
    else:
        opened = _opened_pg_store(request.getfixturevalue("pg_url"))
    yield opened
    opened.close()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("postgres-no-pgvector", marks=pytest.mark.postgres),
    ]
)
def vector_store(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Store | PgStore]:
    """Like `backend_store`, plus a PostgreSQL server without pgvector (vectors compared by
    the worker). The plain `postgres` case is the first installation found (pgvector if any)."""
    opened: Store | PgStore
    if request.param == "sqlite":
        opened = Store(settings.db_path)
        opened.open()
        yield opened
        opened.close()
        return
    if request.param == "postgres":
        opened = _opened_pg_store(request.getfixturevalue("pg_url"))
        yield opened
        opened.close()
        return
    server = request.getfixturevalue("postgres_server_without_pgvector")
    with server.database() as url:
        opened = _opened_pg_store(url)
        yield opened
        opened.close()
