"""The hook's plumbing: spool appends (torn lines, bound, rename races), worker command, quoting."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.hook_modules import hook_io


def records(n: int, start: int = 0) -> list[dict[str, object]]:
    return [
        {"v": 1, "method": "POST", "path": "/api/observations", "body": {"i": i}}
        for i in range(start, start + n)
    ]


def spool_files(home: Path) -> list[Path]:
    """Rotated segments (oldest first), then the active events.jsonl."""
    return sorted((home / "spool").glob("*.jsonl"))


def spooled(home: Path) -> list[dict[str, object]]:
    return [
        json.loads(line)
        for path in spool_files(home)
        for line in path.read_text().splitlines()
        if line.strip()
    ]


def test_append_is_one_line_per_record_in_a_private_folder(tmp_path: Path) -> None:
    assert hook_io.spool_append(str(tmp_path), records(3)) == 3
    assert [r["body"] for r in spooled(tmp_path)] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert stat.S_IMODE(os.stat(tmp_path / "spool").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "spool" / "events.jsonl").st_mode) == 0o600


def test_a_torn_last_line_stays_alone(tmp_path: Path) -> None:
    hook_io.spool_append(str(tmp_path), records(1))
    with open(tmp_path / "spool" / "events.jsonl", "a") as handle:
        handle.write('{"v":1,"method":"PO')  # a writer killed mid-line
    hook_io.spool_append(str(tmp_path), records(1, start=5))
    lines = (tmp_path / "spool" / "events.jsonl").read_text().splitlines()
    assert lines[1] == '{"v":1,"method":"PO'
    assert json.loads(lines[2])["body"] == {"i": 5}


def test_bound_drops_the_oldest_and_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_SPOOL_MAX_BYTES", "2000")
    for i in range(60):
        hook_io.spool_append(str(tmp_path), records(1, start=i))
    kept = spooled(tmp_path)
    dropped = json.loads((tmp_path / "spool" / "dropped.json").read_text())["dropped"]
    assert sum(p.stat().st_size for p in spool_files(tmp_path)) <= 2000
    assert len(spool_files(tmp_path)) > 1  # rotated segments, the oldest deleted whole
    assert dropped + len(kept) == 60
    assert [r["body"]["i"] for r in kept] == list(range(60 - len(kept), 60))  # newest kept


def test_a_record_bigger_than_the_bound_is_dropped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_SPOOL_MAX_BYTES", "100")
    big = [{"v": 1, "body": {"x": "y" * 500}}]
    assert hook_io.spool_append(str(tmp_path), big) == 0
    assert json.loads((tmp_path / "spool" / "dropped.json").read_text())["dropped"] == 1


def test_append_after_the_worker_claimed_the_file_goes_to_a_new_file(tmp_path: Path) -> None:
    hook_io.spool_append(str(tmp_path), records(2))
    claimed = tmp_path / "spool" / "events.123.replaying"
    os.rename(tmp_path / "spool" / "events.jsonl", claimed)
    hook_io.spool_append(str(tmp_path), records(1, start=9))
    assert [r["body"] for r in spooled(tmp_path)] == [{"i": 9}]
    assert len(claimed.read_text().splitlines()) == 2


def test_worker_command_prefers_the_recorded_interpreter(tmp_path: Path) -> None:
    (tmp_path / "install.json").write_text(json.dumps({"python": sys.executable}))
    argv = hook_io.worker_command(str(tmp_path), "/nowhere")
    assert argv[:4] == [sys.executable, "-P", "-m", "worker"]  # -P: never the project's worker/
    (tmp_path / "install.json").write_text(json.dumps({"python": "/no/such/python"}))
    argv = hook_io.worker_command(str(tmp_path), "/nowhere")
    assert argv[-4:] == ["start", "--foreground", "--log-file", "--quiet"]
    assert argv[0] != "/no/such/python"


def test_every_python_the_hook_may_start_the_worker_with_gets_a_safe_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    venv = checkout / ".venv" / "bin" / "python"
    venv.write_text("#!/bin/sh\n")
    venv.chmod(0o755)
    assert hook_io.worker_command(str(tmp_path), str(checkout))[:3] == [str(venv), "-P", "-m"]
    assert hook_io.worker_command(str(tmp_path), "/nowhere")[:3] == [sys.executable, "-P", "-m"]
    # A `cairn` found through a relative PATH entry would be the project's own.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "cairn").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "cairn").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "bin")
    assert hook_io.worker_command(str(tmp_path), "/nowhere")[0] == sys.executable
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert hook_io.worker_command(str(tmp_path), "/nowhere")[0] == str(tmp_path / "bin" / "cairn")


def test_the_worker_pythonpath_never_names_the_current_folder(tmp_path: Path) -> None:
    """An empty or relative PYTHONPATH entry would be the project the hook runs in."""
    current = os.pathsep.join(["", "/opt/lib", "src", ".", "/usr/share/py"])
    assert hook_io.worker_pythonpath("/nowhere", current) == "/opt/lib:/usr/share/py"
    (tmp_path / "worker").mkdir()
    (tmp_path / "worker" / "__init__.py").write_text("")
    assert hook_io.worker_pythonpath(str(tmp_path), os.pathsep) == str(tmp_path)


def test_query_string_quotes_everything_unsafe() -> None:
    qs = hook_io.query_string({"project": "/a b/é", "query": "x&y=z#?", "empty": "", "none": None})
    assert qs == "?project=/a%20b/%C3%A9&query=x%26y%3Dz%23%3F"


def test_find_worker_needs_both_files(tmp_path: Path) -> None:
    assert hook_io.find_worker(str(tmp_path)) is None
    (tmp_path / "worker.json").write_text(json.dumps({"pid": 1, "port": 4321}))
    assert hook_io.find_worker(str(tmp_path)) is None
    (tmp_path / "token").write_text("tok\n")
    worker = hook_io.find_worker(str(tmp_path))
    assert worker is not None and (worker.port, worker.token) == (4321, "tok")
    (tmp_path / "worker.json").write_text("{garbage")
    assert hook_io.find_worker(str(tmp_path)) is None


def test_unreachable_worker_raises_unavailable_quickly() -> None:
    from tests.e2e.worker_process import free_port

    worker = hook_io.Worker(free_port(), "t")
    with pytest.raises(hook_io.Unavailable):
        worker.request("GET", "/health", timeout=0.5)


def test_a_spawned_worker_that_exits_is_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's own child, a real worker whose team database is unreachable, exits (code 3):
    the wait ends there, far before its deadline (a hang guard here), and hooks.log says why to
    look in worker.stderr.log; the password is never in the hook's log."""
    import time

    from tests.e2e.worker_process import free_port

    home = tmp_path / ".cairn"
    home.mkdir()
    (home / "install.json").write_text(json.dumps({"python": sys.executable}))
    url = f"postgresql://ann:s3cret-pw@127.0.0.1:{free_port()}/team?connect_timeout=3"
    monkeypatch.setenv("CAIRN_DATABASE_URL", url)
    monkeypatch.setenv("CAIRN_PORT", str(free_port()))
    pid = hook_io.spawn_worker(str(home))
    assert pid is not None
    assert hook_io.wait_healthy(str(home), time.monotonic() + 120, pid) is None
    log = (home / "logs" / "hooks.log").read_text()
    stderr_log = home / "logs" / "worker.stderr.log"
    assert f"the worker exited with code 3 before answering; see {stderr_log}" in log
    assert "s3cret-pw" not in log
    assert "Application startup failed" in stderr_log.read_text()
    with pytest.raises(ChildProcessError):  # reaped by the wait
        os.waitpid(pid, os.WNOHANG)
