"""Start a real worker (`python -m worker start --foreground`) on a free loopback port."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class EventStream:
    """One SSE connection: yields {"id", "event", "data"} per event and {"comment"} per ping."""

    def __init__(self, port: int, token: str, last_event_id: str | None, timeout: float) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self.conn.request("GET", "/api/events", headers=headers)
        self.response = self.conn.getresponse()
        if self.response.status != 200:
            body = self.response.read()
            self.conn.close()
            raise RuntimeError(f"SSE answered {self.response.status}: {body!r}")

    def __iter__(self) -> Iterator[dict[str, str]]:
        try:
            yield from self._read()
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            return  # closed under us (close() from another thread) or by the worker
        finally:
            self.conn.close()

    def _read(self) -> Iterator[dict[str, str]]:
        event: dict[str, str] = {}
        while True:
            raw = self.response.readline()
            if not raw:
                return
            line = raw.decode("utf-8").rstrip("\r\n")
            if line == "":
                if event:
                    yield event
                event = {}
            elif line.startswith(":"):
                yield {"comment": line[1:].strip()}
            else:
                name, _, value = line.partition(":")
                event[name] = value[1:] if value.startswith(" ") else value

    def close(self) -> None:
        """Safe from any thread: the reader sees end-of-stream and closes the connection."""
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class WorkerProcess:
    home: Path
    port: int = 0
    env_extra: dict[str, str] = field(default_factory=dict)
    # Run the worker under this file-descriptor limit (soft and hard), e.g. to flood it cheaply.
    rlimit_nofile: int | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return (self.home / "token").read_text().strip()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
        env.update({"CAIRN_HOME": str(self.home), "CAIRN_EMBED_ENABLED": "0"})
        if "CAIRN_MODELS_DIR" in os.environ:  # tests share one models folder (conftest.py)
            env["CAIRN_MODELS_DIR"] = os.environ["CAIRN_MODELS_DIR"]
        env.update(self.env_extra)
        return env

    def start(self, timeout: float = 20.0) -> WorkerProcess:
        if not self.port:
            self.port = free_port()
        self.home.parent.mkdir(parents=True, exist_ok=True)  # the worker creates home (0700)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "worker", "start", "--foreground", "--port", str(self.port)],
                env=self.env(),
                stdout=log,
                stderr=log,
                preexec_fn=self._limit_fds if self.rlimit_nofile else None,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"worker exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}"
                )
            info = self.runtime()
            if info is not None and info.get("pid") == self.proc.pid:
                self.port = int(info["port"])  # the worker may have had to pick another port
                try:
                    with urllib.request.urlopen(self.url + "/health", timeout=1) as resp:
                        if resp.status == 200:
                            return self
                except (urllib.error.URLError, OSError):
                    pass
            time.sleep(0.05)
        raise RuntimeError("worker did not become healthy")

    def _limit_fds(self) -> None:
        import resource

        assert self.rlimit_nofile is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.rlimit_nofile, self.rlimit_nofile))

    @property
    def log_path(self) -> Path:
        return self.home.parent / f"worker-{self.home.name}.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def runtime(self) -> dict[str, Any] | None:
        try:
            info = json.loads((self.home / "worker.json").read_text())
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) else None

    def backend(self) -> str:
        """The store backend the running worker says it uses ('sqlite' or 'postgres')."""
        status, body = self.request("GET", "/api/status")
        assert status == 200, body
        return str(body["database"]["backend"])

    def cli(
        self, *args: str, timeout: float = 60, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run `cairn <args>` (as `python -m worker`) against this worker's home, in `cwd`."""
        return subprocess.run(
            [sys.executable, "-m", "worker", *args],
            env=self.env(),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def events(self, *, last_event_id: str | None = None, timeout: float = 10) -> EventStream:
        """Open the SSE stream (iterate it for events; close() from any thread)."""
        return EventStream(self.port, self.token, last_event_id, timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 10,
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token or self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw else None

    def request_text(
        self, method: str, path: str, *, headers: dict[str, str] | None = None, timeout: float = 10
    ) -> str:
        """A page (or any non-JSON answer) as text, with the token."""
        req = urllib.request.Request(self.url + path, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return str(resp.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            return str(exc.read().decode("utf-8", "replace"))

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        code = self.proc.returncode
        self.proc = None
        return code
