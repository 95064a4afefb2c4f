"""A real worker over raw sockets: requests a client library would not send (a repeated Host
header, half-open connections that never finish their headers)."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.hook_runner import base, hook_env, run_hook
from tests.e2e.worker_process import WorkerProcess
from tests.hook_modules import hook_io

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]


def raw_request(port: int, head: str, timeout: float = 10) -> tuple[int, dict[str, object]]:
    """Send `head` (request line and headers, CRLF-joined) and read the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    _, _, body = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), json.loads(body) if body else {}


def test_a_repeated_host_header_is_400(worker: WorkerProcess) -> None:
    auth = f"Authorization: Bearer {worker.token}"
    ok, _ = raw_request(
        worker.port, f"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\nConnection: close"
    )
    assert ok == 200
    for hosts in (
        ["127.0.0.1", "evil.example"],
        ["evil.example", "127.0.0.1"],
        ["127.0.0.1", "127.0.0.1"],
    ):
        lines = "\r\n".join(f"Host: {h}" for h in hosts)
        status, body = raw_request(
            worker.port, f"GET /api/status HTTP/1.1\r\n{lines}\r\n{auth}\r\nConnection: close"
        )
        assert status == 400, hosts
        error = body["error"]
        assert isinstance(error, dict) and error["code"] == "bad_request"
        assert "'host' header appears more than once" in error["message"]
    # Same for the other headers the security checks read.
    status, body = raw_request(
        worker.port,
        f"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n{auth}\r\nConnection: close",
    )
    assert status == 400 and "'authorization'" in json.dumps(body)


@pytest.mark.parametrize("sid", ["x/summary", "a/b/end", "a//b", "..", "tab\there"])
def test_hooks_record_sessions_whose_id_would_not_round_trip(
    worker: WorkerProcess, tmp_path: Path, sid: str
) -> None:
    """A client that sends such an id gets a precise 400; the hook maps it and never fails."""
    refused, body = worker.request("POST", "/api/sessions", {"session_id": sid, "project": "/p"})
    assert refused == 400 and body["error"]["field"] == "session_id"

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    env = hook_env(worker.home)
    start = run_hook("SessionStart", {**base(sid, repo, "SessionStart"), "source": "startup"}, env)
    prompt = run_hook(
        "UserPromptSubmit", {**base(sid, repo, "UserPromptSubmit"), "prompt": "hello"}, env
    )
    end = run_hook("SessionEnd", {**base(sid, repo, "SessionEnd"), "reason": "exit"}, env)
    assert [start.returncode, prompt.returncode, end.returncode] == [0, 0, 0]

    mapped = hook_io.route_safe_id(sid)
    status, session = worker.request("GET", "/api/sessions/" + quote(mapped, safe=""))
    assert status == 200 and session["id"] == mapped, session
    assert session["status"] == "ended" and [p["text"] for p in session["prompts"]] == ["hello"]
    assert not list((worker.home / "spool").glob("*.jsonl")) or all(
        f.stat().st_size == 0 for f in (worker.home / "spool").glob("*.jsonl")
    )


@pytest.mark.parametrize("sid", ["100%", "%2F", "a%2Fsummary", "a?b#c", "ünï 🙂"])
def test_ids_with_escapes_round_trip_through_a_real_worker(worker: WorkerProcess, sid: str) -> None:
    created, _ = worker.request("POST", "/api/sessions", {"session_id": sid, "project": "/p"})
    assert created == 201
    path = "/api/sessions/" + quote(sid, safe="")
    status, session = worker.request("GET", path)
    assert status == 200 and session["id"] == sid
    ended, row = worker.request("POST", path + "/end", {})
    assert ended == 200 and row["id"] == sid


FD_LIMIT = 256  # the worker's descriptor limit: connection cap = 256 - 128 reserved = 128
HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0


def half_open(port: int, n: int) -> list[socket.socket]:
    """`n` connections: half send nothing, half the start of a request and no more."""
    socks = []
    for i in range(n):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if i % 2:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        socks.append(sock)
    return socks


def closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


@pytest.fixture
def fd_limited_worker(
    isolated_home: Path, backend: str, database_env: dict[str, str]
) -> Iterator[WorkerProcess]:
    proc = WorkerProcess(
        home=isolated_home,
        rlimit_nofile=FD_LIMIT,
        env_extra={
            "CAIRN_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT),
            "CAIRN_BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT),
            **database_env,
        },
    ).start()
    assert proc.backend() == backend
    try:
        yield proc
    finally:
        proc.stop()


def test_hooks_get_through_a_slowloris_flood(
    fd_limited_worker: WorkerProcess, tmp_path: Path, database_env: dict[str, str]
) -> None:
    """More half-open connections than the worker has descriptors: requests still succeed."""
    worker = fd_limited_worker
    flood = half_open(worker.port, FD_LIMIT + 44)  # 300: past the descriptor limit itself
    try:
        with urllib.request.urlopen(worker.url + "/health", timeout=10) as resp:
            assert resp.status == 200
        status, _ = worker.request(
            "POST", "/api/observations", {"project": "/p", "type": "note", "title": "in a flood"}
        )
        assert status == 201
        repo = tmp_path / "repo"
        (repo / ".git").mkdir(parents=True)
        hook = run_hook(
            "UserPromptSubmit",
            {**base("s-flood", repo, "UserPromptSubmit"), "prompt": "hello"},
            hook_env(worker.home, **database_env),
        )
        assert hook.returncode == 0
        status, session = worker.request("GET", "/api/sessions/s-flood")
        assert status == 200 and [p["text"] for p in session["prompts"]] == ["hello"]
    finally:
        for sock in flood:
            sock.close()


def test_half_open_connections_are_closed_after_the_header_timeout(
    fd_limited_worker: WorkerProcess,
) -> None:
    socks = half_open(fd_limited_worker.port, 20)  # well under the cap: only the timeout acts
    try:
        time.sleep(HEADER_TIMEOUT / 2)
        assert not any(closed_by_peer(s, 0.01) for s in socks)  # not before the deadline
        assert all(closed_by_peer(s, HEADER_TIMEOUT * 3) for s in socks)
        # A request on a kept-alive connection still gets its full header time.
        with socket.create_connection(("127.0.0.1", fd_limited_worker.port), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    finally:
        for sock in socks:
            sock.close()


def test_a_body_sent_a_byte_at_a_time_is_cut_off_and_stores_nothing(
    fd_limited_worker: WorkerProcess,
) -> None:
    """Headers on time, then a trickle of body: closed once the body timeout passes."""
    worker = fd_limited_worker
    body = json.dumps({"project": "/p", "type": "note", "title": "trickled"}).encode()
    head = (
        "POST /api/observations HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {worker.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", worker.port), timeout=10) as sock:
        sock.sendall(head.encode("latin-1"))
        started = time.monotonic()
        sent = 0
        closed = False
        # A byte every 0.25 s: more often than any idle timeout, far slower than the body needs.
        while sent < len(body) - 1 and time.monotonic() - started < BODY_TIMEOUT * 4:
            try:
                sock.sendall(body[sent : sent + 1])
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            sent += 1
            if closed_by_peer(sock, 0.25):
                closed = True
                break
        assert closed, "the worker kept reading a trickled body past the body timeout"
        assert time.monotonic() - started >= BODY_TIMEOUT * 0.9  # not before the deadline
    status, found = worker.request("GET", "/api/observations?project=/p")
    assert status == 200 and "trickled" not in json.dumps(found)
    log = worker.log_path.read_text()
    assert "the client left before sending its whole body" in log and "Traceback" not in log
    # A body sent at once on a new connection is stored as usual.
    status, _ = worker.request(
        "POST", "/api/observations", {"project": "/p", "type": "note", "title": "at once"}
    )
    assert status == 201
