"""The real worker process: port choice, one worker per home, stale runtime files, signals,
token rotation and the lifecycle CLI (start/stop/status/token), on both backends (the home's
SQLite file, a team database)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.worker_process import WorkerProcess, free_port

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]


def post(worker: WorkerProcess, i: int, prefix: str = "e") -> tuple[int, object]:
    return worker.request(
        "POST",
        "/api/observations",
        {"project": "/repo", "type": "command", "title": f"cmd {i}", "event_id": f"{prefix}{i}"},
    )


def test_port_taken_by_another_program_picks_a_free_port_and_says_so(
    isolated_home: Path, backend: str, database_env: dict[str, str]
) -> None:
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen(1)
    taken = squatter.getsockname()[1]
    worker = WorkerProcess(home=isolated_home, port=taken, env_extra=database_env)
    try:
        worker.start()
        assert worker.port != taken and worker.backend() == backend
        assert worker.runtime()["port"] == worker.port  # type: ignore[index]
        assert worker.request("GET", "/api/status")[1]["port"] == worker.port  # type: ignore[index]
        log = worker.log_path.read_text()
        assert f"port {taken} is taken by another program; using port {worker.port}" in log
    finally:
        worker.stop()
        squatter.close()


def test_second_start_reports_the_running_worker(worker: WorkerProcess) -> None:
    # Foreground: the second process exits 0 at once, naming the running one.
    second = worker.cli("start", "--foreground", "--port", str(free_port()))
    assert second.returncode == 0
    assert f"already running: pid {worker.pid}" in second.stdout
    # Background (the default) does the same without spawning anything.
    third = worker.cli("start")
    assert third.returncode == 0 and f"pid {worker.pid}" in third.stdout
    assert worker.runtime()["pid"] == worker.pid  # type: ignore[index]
    assert worker.request("GET", "/health")[0] == 200


def test_stale_runtime_file_is_detected_and_replaced(
    isolated_home: Path, backend: str, database_env: dict[str, str]
) -> None:
    isolated_home.mkdir(parents=True)
    # A live pid that is not a Cairn worker (pid reuse after a crash): our own test process.
    stale = {"pid": os.getpid(), "port": 1, "host": "127.0.0.1", "version": "0"}
    (isolated_home / "worker.json").write_text(json.dumps(stale))
    worker = WorkerProcess(home=isolated_home, env_extra=database_env)
    status = worker.cli("status")
    assert status.returncode == 1 and "not running" in status.stdout
    try:
        worker.start()
        info = worker.runtime()
        assert info is not None and info["pid"] == worker.pid and info["port"] == worker.port
        assert worker.backend() == backend
    finally:
        worker.stop()


def test_sigkill_then_restart_keeps_every_acknowledged_write(worker: WorkerProcess) -> None:
    acknowledged: list[int] = []
    for round_ in range(3):
        for i in range(30):
            status, body = post(worker, i, f"r{round_}-")
            assert status == 201
            acknowledged.append(body["id"])  # type: ignore[index]
        worker.stop(signal.SIGKILL)
        assert (worker.home / "worker.json").exists()  # left behind by the crash
        worker.start()
    status, body = worker.request(
        "GET", "/api/observations?ids=" + ",".join(map(str, acknowledged))
    )
    assert status == 200 and len(body["items"]) == len(acknowledged)  # type: ignore[index]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_writes_finishes_them_and_exits_cleanly(
    worker: WorkerProcess, sig: signal.Signals
) -> None:
    acknowledged: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(k: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                status, body = post(worker, i, f"w{k}-")
            except OSError:
                return  # the worker stopped accepting
            if status == 201:
                with lock:
                    acknowledged.append(body["id"])  # type: ignore[index]
            elif status != 503:  # 503 = refused while shutting down: not acknowledged
                raise AssertionError(f"unexpected {status}: {body}")
            i += 1

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    assert worker.stop(sig) == 0
    stop.set()
    for t in threads:
        t.join(10)
    assert not (worker.home / "worker.json").exists()
    assert acknowledged
    worker.start()
    ids = ",".join(map(str, acknowledged))
    status, body = worker.request("GET", f"/api/observations?ids={ids}&limit=500")
    if len(acknowledged) > 500:  # the ids filter takes at most max_page_size ids per call
        found = 0
        for start in range(0, len(acknowledged), 500):
            chunk = ",".join(map(str, acknowledged[start : start + 500]))
            found += len(worker.request("GET", f"/api/observations?ids={chunk}")[1]["items"])  # type: ignore[index]
        assert found == len(acknowledged)
    else:
        assert status == 200 and len(body["items"]) == len(acknowledged)  # type: ignore[index]


def test_token_rotation_is_picked_up_without_restart(worker: WorkerProcess) -> None:
    old = worker.token
    assert worker.request("GET", "/api/status", token=old)[0] == 200
    rotated = worker.cli("token", "--rotate")
    assert rotated.returncode == 0
    new = rotated.stdout.strip().splitlines()[-1]
    assert new != old and new == worker.token
    assert worker.request("GET", "/api/status", token=old)[0] == 401
    assert worker.request("GET", "/api/status", token=new)[0] == 200
    assert (worker.home / "token").stat().st_mode & 0o777 == 0o600
    assert worker.cli("token").stdout.strip() == new


PASSWORD = "hunter2-pw"


@pytest.fixture
def worker_with_password(
    isolated_home: Path, database_env: dict[str, str]
) -> Iterator[WorkerProcess]:
    """A worker as `worker`, but on a team database its URL carries a password (the test server
    trusts loopback, so any password connects): what status and doctor must never show."""
    env = dict(database_env)
    if env:
        env["CAIRN_DATABASE_URL"] = env["CAIRN_DATABASE_URL"].replace(
            "://postgres@", f"://postgres:{PASSWORD}@", 1
        )
        assert f":{PASSWORD}@" in env["CAIRN_DATABASE_URL"]
    proc = WorkerProcess(home=isolated_home, env_extra=env)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def test_status_reports_pid_port_uptime_counts_and_size(
    worker_with_password: WorkerProcess, backend: str
) -> None:
    worker = worker_with_password
    post(worker, 1)
    text = worker.cli("status")
    assert text.returncode == 0
    assert f"pid {worker.pid}" in text.stdout and f"port {worker.port}" in text.stdout
    assert "observations 1" in text.stdout
    data = json.loads(worker.cli("status", "--json").stdout)
    assert data["running"] is True and data["pid"] == worker.pid
    assert data["counts"]["observations"] == 1 and data["db_size_bytes"] > 0
    assert data["uptime_seconds"] >= 0
    assert data["database"]["backend"] == backend and data["database"]["reachable"] is True
    assert data["ok"] is True
    doctor = worker.cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    if backend == "sqlite":
        assert "cairn.db" in text.stdout
        assert checks["database"]["status"] == "ok" and "passes quick_check" in doctor.stdout
        return
    # The team database is named, its password masked, in status and doctor alike.
    named = "postgresql://postgres:***@127.0.0.1:"
    assert f"database {named}" in text.stdout and data["db_path"].startswith(named)
    assert checks["team"]["status"] == "ok" and named in checks["team"]["detail"]
    assert checks["database"]["detail"].startswith(f"memory is in the team database {named}")
    for out in (text.stdout, json.dumps(data), doctor.stdout, doctor.stderr):
        assert PASSWORD not in out


def test_background_start_and_stop(
    isolated_home: Path, backend: str, database_env: dict[str, str]
) -> None:
    handle = WorkerProcess(home=isolated_home, env_extra=database_env)
    started = handle.cli("start", "--port", str(free_port()))
    assert started.returncode == 0, started.stderr
    info = handle.runtime()
    assert info is not None
    pid = int(info["pid"])
    try:
        assert "Cairn worker started" in started.stdout
        handle.port = int(info["port"])
        assert handle.request("GET", "/health")[0] == 200
        # the worker started in the background uses the database this shell names
        assert handle.request("GET", "/api/status")[1]["database"]["backend"] == backend  # type: ignore[index]
        assert (isolated_home / "logs" / "worker.log").exists()
        stopped = handle.cli("stop")
        assert stopped.returncode == 0 and f"stopped (pid {pid})" in stopped.stdout
        assert not (isolated_home / "worker.json").exists()
        assert handle.cli("stop").stdout.strip() == "Cairn worker is not running"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.sqlite_only(
    "refused by the settings check (load_settings) before any database is named or opened"
)
def test_worker_refuses_a_non_loopback_bind(isolated_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"CAIRN_HOME": str(isolated_home), "CAIRN_HOST": "0.0.0.0"})
    proc = subprocess.run(
        [sys.executable, "-m", "worker", "start", "--foreground"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "binds loopback only" in proc.stderr
    assert not (isolated_home / "worker.json").exists()


@pytest.mark.postgres  # a team database nothing listens for: no server is started
@pytest.mark.parametrize("command", [("start",), ("open", "--no-browser")])
def test_a_worker_that_exits_at_start_is_reported_at_once_with_its_reason(
    isolated_home: Path, command: tuple[str, ...]
) -> None:
    """The detached worker exits (code 3: its team database is unreachable): the command stops
    waiting when the child exits, not after --wait (an hour here: the subprocess's own 60 s
    bound turns a wait into a failure), and prints the reason from worker.stderr.log, the log
    uvicorn wrote it to, with the password masked."""
    url = f"postgresql://ann:{PASSWORD}@127.0.0.1:{free_port()}/team?connect_timeout=3"
    handle = WorkerProcess(
        home=isolated_home,
        env_extra={"CAIRN_DATABASE_URL": url, "CAIRN_PORT": str(free_port())},
    )
    done = handle.cli(*command, "--wait", "3600")
    assert done.returncode == 1
    err = done.stderr
    assert "the worker exited with code 3 before answering:" in err
    assert "the team database postgresql://ann:***@127.0.0.1:" in err and "unreachable" in err
    assert f"see {isolated_home / 'logs' / 'worker.stderr.log'}" in err
    assert "Traceback" not in err and 'File "' not in err  # the reason, not the frames
    assert PASSWORD not in done.stdout + err
    assert handle.runtime() is None
