"""Run the worker in this process: lock the home, bind loopback, serve with uvicorn."""

from __future__ import annotations

import errno
import io
import json
import logging
import logging.handlers
import signal
import socket
import sys
import urllib.request
from collections.abc import Callable

import uvicorn

from worker.app import create_app
from worker.connections import guarded_protocol
from worker.errors import ConfigError
from worker.home import ensure_home, private_opener
from worker.paths import cairn_command
from worker.runtime import acquire_lock
from worker.settings import Settings
from worker.team import check_team_database

log = logging.getLogger(__name__)


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Log files (and each one rotation starts) are 0600 whatever the umask."""

    def _open(self) -> io.TextIOWrapper:
        stream = open(  # noqa: SIM115 - the handler owns and closes its stream
            self.baseFilename,
            self.mode,
            encoding=self.encoding,
            errors=self.errors,
            opener=private_opener,
        )
        assert isinstance(stream, io.TextIOWrapper)  # a text mode ("a")
        return stream


def configure_logging(settings: Settings, *, to_file: bool) -> None:
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    if to_file:
        ensure_home(settings.home, settings.logs_dir)
        handler: logging.Handler = PrivateRotatingFileHandler(
            settings.logs_dir / "worker.log",
            maxBytes=settings.server.log_max_bytes,
            backupCount=settings.server.log_backups,
        )
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(fmt)
    root.handlers[:] = [handler]


def _is_cairn(host: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/health", timeout=1) as resp:
            return bool(json.loads(resp.read()).get("ok")) and resp.status == 200
    except Exception:
        return False


def bind_socket(settings: Settings, port: int) -> socket.socket:
    """Bind the loopback port; if something else holds it, take a free one and say so."""
    family = socket.AF_INET6 if ":" in settings.server.host else socket.AF_INET
    host = "127.0.0.1" if settings.server.host == "localhost" else settings.server.host
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when the
    # proto says TCP; with proto 0 every response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE or port == 0:
            raise
        other = "another Cairn worker" if _is_cairn(host, port) else "another program"
        sock.bind((host, 0))
        log.warning(
            "port %d is taken by %s; using free port %d", port, other, sock.getsockname()[1]
        )
        print(
            f"cairn: port {port} is taken by {other}; using port {sock.getsockname()[1]}",
            file=sys.stderr,
        )
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def stop_handler(server: uvicorn.Server) -> Callable[[int, object], None]:
    """SIGTERM/SIGINT outside uvicorn's own handlers: before it takes them over (a `cairn stop`
    right after start) the server stops all the same; after its graceful shutdown, uvicorn's
    re-raise of the signal it caught is absorbed so the process exits 0."""

    def handle(signum: int, frame: object) -> None:
        if not server.should_exit:
            log.info("signal %d received before the server took over signals: stopping", signum)
            server.should_exit = True
        else:
            log.info("signal %d received after shutdown", signum)

    return handle


def serve(settings: Settings, *, log_to_file: bool = False, announce: bool = True) -> int:
    """Serve until SIGTERM/SIGINT. Returns a process exit code."""
    configure_logging(settings, to_file=log_to_file)
    try:
        check_team_database(settings.home)  # a team database needs the PostgreSQL driver
    except ConfigError as exc:
        log.error("%s", exc)  # a detached worker's reader is its log
        raise
    lock = acquire_lock(settings)  # raises AlreadyRunning
    try:
        sock = bind_socket(settings, settings.server.port)
        port = sock.getsockname()[1]
        app = create_app(settings, port=port)
        config = uvicorn.Config(
            app,
            http=guarded_protocol(settings),
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=10,
            server_header=False,
            proxy_headers=False,
        )
        server = uvicorn.Server(config)
        if announce:
            url = f"http://127.0.0.1:{port}"
            print(f"Cairn worker listening on {url}", flush=True)
            print(f"  dashboard: {url}/  (log in with: {cairn_command()} open)", flush=True)
            print(f"  token file: {settings.token_path}", flush=True)
            print(f"  database:   {settings.db_path}", flush=True)
        log.info("worker starting on 127.0.0.1:%d (home %s)", port, settings.home)
        handler = stop_handler(server)
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
        server.run(sockets=[sock])  # uvloop when installed; httptools with the guards above
        log.info("worker stopped")
        return 0
    finally:
        lock.close()
