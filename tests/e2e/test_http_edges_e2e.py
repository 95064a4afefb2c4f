"""A real worker over raw sockets: requests a client library would not send (a repeated Host
header, half-open connections that never finish their headers)."""

from __future__ import annotations

import json
import socket

import pytest

from tests.e2e.worker_process import WorkerProcess

pytestmark = pytest.mark.e2e


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
