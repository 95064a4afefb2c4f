"""Faults of a team on one real PostgreSQL database: two real workers (ann, bob), each driven by
sessions of real hook processes posting events with unique markers, through kill -9 of one worker
during writes and a restart of the database server under load. After the spools drain, every
event is stored exactly once in the shared database (docs/team.md, faults). And with
the database down or silent, status still answers, degraded, while the hooks spool.

CI size: 2 sessions per worker x CAIRN_TEAM_FAULT_EVENTS (default 20) events.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests import pg
from tests.e2e.hook_runner import run_hook, tool_payload, wait_for
from tests.e2e.hook_sessions import Session, drain_spool, hook_env, marker_counts
from tests.e2e.team_checkout import PROJECT, checkout
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

SESSIONS = 2
PASSWORD = "hunter2-pw"  # the test server trusts loopback: any password connects
EVENTS = int(os.environ.get("CAIRN_TEAM_FAULT_EVENTS", "20"))
# A hook still running after this is hung (its own budget is 1 s; this bound is not a speed aim).
HOOK_HANG_S = 15.0


@dataclass
class Member:
    """One teammate: a worker on the team database and the sessions of her checkout."""

    name: str
    worker: WorkerProcess
    sessions: list[Session]

    @property
    def progress(self) -> int:
        """Hook processes finished so far, over every session."""
        return sum(len(s.runs) for s in self.sessions)

    @property
    def hook_log(self) -> str:
        try:
            return (self.worker.home / "logs" / "hooks.log").read_text(errors="replace")
        except OSError:
            return ""


@contextmanager
def team(url: str, root: Path) -> Iterator[tuple[Member, Member]]:
    """Ann's and Bob's workers on the database at `url`, each with SESSIONS sessions to run."""
    members: list[Member] = []
    try:
        for name in ("ann", "bob"):
            email = f"{name}@acme.dev"
            worker = WorkerProcess(
                home=root / name / ".cairn",
                env_extra={
                    "CAIRN_DATABASE_URL": url,
                    "CAIRN_AUTHOR": email,
                    "CAIRN_SPOOL_REPLAY_SECONDS": "0.5",
                },
            )
            members.append(Member(name, worker, []))
            worker.start()
            repo = checkout(root / name / "work" / "app", email)
            # The hooks may not start a worker themselves: the test owns the workers' lives.
            env = hook_env(worker.home, CAIRN_AUTOSTART="0", CAIRN_DATABASE_URL=url)
            members[-1].sessions = [
                Session(f"{name}-s{k}", repo, EVENTS, env, timeout=HOOK_HANG_S)
                for k in range(SESSIONS)
            ]
        yield members[0], members[1]
    finally:
        for member in members:
            member.worker.stop()


class Traffic:
    """Every session of both members running at once, one thread each."""

    def __init__(self, members: tuple[Member, Member]) -> None:
        self.members = members
        sessions = [s for m in members for s in m.sessions]
        self._pool = ThreadPoolExecutor(len(sessions))
        self._runs: list[Future[None]] = [self._pool.submit(s.run) for s in sessions]

    def reach(self, member: Member, progress: int) -> None:
        """Wait until `member`'s hooks finished `progress` runs (or every session ended)."""
        wait_for(
            lambda: member.progress >= progress or all(run.done() for run in self._runs),
            timeout=EVENTS * SESSIONS * HOOK_HANG_S,
        )

    def finish(self) -> None:
        """Wait for every session; a hook that hung (TimeoutExpired) fails the test here."""
        try:
            for run in self._runs:
                run.result(timeout=EVENTS * HOOK_HANG_S)
        finally:
            self._pool.shutdown(wait=True)


@pytest.fixture
def own_server() -> Iterator[pg.PostgresServer]:
    """A server of this test's own: restarting it cuts no other test's connections."""
    with pg.throwaway_server() as server:
        yield server


def assert_exactly_once(url: str, members: tuple[Member, Member]) -> None:
    """Every marker once: through each author's own worker (tool observations are private to
    their author), and counted in the shared database itself."""
    for member in members:
        for session in member.sessions:
            counts = marker_counts(member.worker, session.session_id)
            lost = session.markers - set(counts)
            doubled = {m: n for m, n in counts.items() if n != 1}
            assert not lost, f"{session.session_id}: {len(lost)} events lost: {sorted(lost)[:3]}"
            assert not doubled, f"{session.session_id}: stored more than once: {doubled}"
            assert set(counts) == session.markers
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT session_id, count(*) FROM observations GROUP BY session_id"
        ).fetchall()
    expected = {s.session_id: EVENTS for m in members for s in m.sessions}
    assert dict(rows) == expected


def assert_degraded(status: int, body: dict[str, Any], worker: WorkerProcess) -> None:
    """GET /api/status of a worker whose team database is down: 200, saying so plainly."""
    assert status == 200, body
    assert body["ok"] is False and body["pid"] == worker.pid and body["port"] == worker.port
    database = body["database"]
    assert database["backend"] == "postgres" and database["reachable"] is False, body
    assert database["error"].startswith("the team database postgresql://"), database
    assert "unreachable" in database["error"] and "Traceback" not in database["error"]
    assert body["counts"] is None and body["db_size_bytes"] is None
    assert body["services"]["spool"]["waiting_events"] >= 0


def assert_hooks_exited_cleanly(members: tuple[Member, Member]) -> None:
    for member in members:
        for session in member.sessions:
            assert len(session.runs) == EVENTS + 1
            failed = [r for r in session.runs if r.exit_code != 0]
            assert not failed, f"{session.session_id}: {failed[0].stderr[-1000:]}"


def spooled(member: Member) -> int:
    """Events of the member's hooks that went the offline way (replayed from the spool)."""
    status, spool = member.worker.request("GET", "/api/spool")
    assert status == 200, spool
    return int(spool["replayed"]) + int(spool["duplicates"])


def test_kill_9_of_one_worker_during_writes_loses_and_duplicates_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    with team(pg_url, tmp_path) as (ann, bob):
        bob_pid = bob.worker.pid
        per_member = SESSIONS * (EVENTS + 1)
        traffic = Traffic((ann, bob))
        try:
            traffic.reach(ann, per_member // 3)
            ann.worker.stop(signal.SIGKILL)  # mid-stream, by its PID
            # Her hooks find no worker meanwhile and spool; Bob's go on to his worker.
            traffic.reach(ann, 2 * per_member // 3)
            ann.worker.start()  # same home, same port
        finally:
            traffic.finish()
        assert_hooks_exited_cleanly((ann, bob))
        drain_spool(ann.worker)
        drain_spool(bob.worker)
        assert_exactly_once(pg_url, (ann, bob))
        assert spooled(ann) > 0, "no event of Ann's went through her spool: nothing was tested"

        # Bob was never interrupted: the same worker process, which refused none of his hooks.
        assert bob.worker.pid == bob_pid and bob.worker.proc is not None
        assert bob.worker.proc.poll() is None
        assert "Connection refused" not in bob.hook_log

        # What Ann shares after her restart still reaches Bob's worker.
        status, memory = ann.worker.request(
            "POST",
            "/api/memories",
            {
                "project": PROJECT,
                "kind": "decision",
                "content": "Invoices are rendered by the billing service, never by the web app",
            },
        )
        assert status == 201, memory
        status, found = bob.worker.request(
            "GET", f"/api/search?q=who+renders+invoices&project={PROJECT}"
        )
        assert status == 200, found
        assert memory["id"] in [hit["id"] for hit in found["hits"]], found


def test_database_restarted_under_load_loses_and_duplicates_nothing(
    own_server: pg.PostgresServer, tmp_path: Path
) -> None:
    with own_server.database() as url, team(url, tmp_path) as (ann, bob):
        pids = {m.name: m.worker.pid for m in (ann, bob)}
        per_member = SESSIONS * (EVENTS + 1)
        traffic = Traffic((ann, bob))
        try:
            traffic.reach(ann, per_member // 3)
            own_server.shut_down()  # fast shutdown: every connection cut mid-stream
            outage = [m.worker.request("GET", "/api/status") for m in (ann, bob)]
            # Hooks of both go on meanwhile: they find their worker, which cannot write, and spool.
            traffic.reach(ann, ann.progress + 2 * SESSIONS)
            traffic.reach(bob, bob.progress + 2 * SESSIONS)
            own_server.start(own_server.port)  # the same port: the workers' URL is unchanged
            # Back at once: the workers' next requests are answered from the database.
            back = [m.worker.request("GET", "/api/status") for m in (ann, bob)]
        finally:
            traffic.finish()
        for (status, body), member in zip(outage, (ann, bob), strict=True):
            # Status still answers, degraded: the worker's facts and why it cannot store.
            assert_degraded(status, body, member.worker)
        for status, body in back:
            assert status == 200 and body["database"]["backend"] == "postgres", body
        assert_hooks_exited_cleanly((ann, bob))
        drain_spool(ann.worker)
        drain_spool(bob.worker)
        assert_exactly_once(url, (ann, bob))
        for member in (ann, bob):
            assert spooled(member) > 0, f"nothing of {member.name}'s went through the spool"
            # Reconnected by themselves: the same worker processes throughout.
            assert member.worker.pid == pids[member.name]


def test_status_reports_the_database_down_while_hooks_spool(
    own_server: pg.PostgresServer, tmp_path: Path
) -> None:
    """The team database down: /api/status answers 200 degraded (password masked), `cairn status`
    says what is wrong and exits 1, the dashboard shows it; /health stays up while the writes
    answer 503, so a real hook process spools its event; back up, nothing is lost."""
    with own_server.database() as plain_url:
        url = plain_url.replace("://postgres@", f"://postgres:{PASSWORD}@", 1)
        worker = WorkerProcess(home=tmp_path / ".cairn", env_extra={"CAIRN_DATABASE_URL": url})
        worker.start()
        try:
            repo = checkout(tmp_path / "work" / "app", "ann@acme.dev")
            env = hook_env(worker.home, CAIRN_AUTOSTART="0", CAIRN_DATABASE_URL=url)
            own_server.shut_down()

            edit = tool_payload("s-down", repo, "Bash", {"command": "make invoices"},
                                {"stdout": "ok"}, "toolu_down")  # fmt: skip
            hook = run_hook("PostToolUse", edit, env, cwd=repo)
            assert hook.returncode == 0, hook.stderr
            assert worker.request("GET", "/health")[0] == 200
            status, body = worker.request("GET", "/api/status")
            assert_degraded(status, body, worker)
            assert body["services"]["spool"]["waiting_events"] == 1
            assert "postgres:***@127.0.0.1" in body["database"]["error"]
            assert worker.request("POST", "/api/observations", {"project": PROJECT,
                                  "type": "command", "title": "$ make"})[0] == 503  # fmt: skip

            text = worker.cli("status")
            assert text.returncode == 1 and "Traceback" not in text.stderr
            assert f"running, pid {worker.pid}" in text.stdout
            assert "DATABASE UNREACHABLE: the team database postgresql://" in text.stdout
            assert "hooks spool their events (1 waiting)" in text.stdout
            page = worker.request_text("GET", "/settings")
            assert "Unreachable: the team database postgresql://postgres:***@" in page
            for shown in (json.dumps(body), text.stdout, text.stderr, page):
                assert PASSWORD not in shown

            own_server.start(own_server.port)
            drain_spool(worker)
            status, body = worker.request("GET", "/api/status")
            assert status == 200 and body["ok"] is True and body["database"]["reachable"]
            assert body["counts"]["observations"] == 1
            assert worker.cli("status").returncode == 0
        finally:
            worker.stop()


@contextmanager
def silent_listener(port: int) -> Iterator[None]:
    """A host that takes connections and never answers (a database host gone dark behind a
    firewall or a hung server): each new connection waits the whole connect timeout."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        yield


def test_status_answers_in_time_when_the_database_does_not(
    own_server: pg.PostgresServer, tmp_path: Path
) -> None:
    """A database that never answers makes each connection wait its timeout (10 s): status
    says so within its own wait, so `cairn status` (5 s) hears from the running worker."""
    with own_server.database() as url:
        worker = WorkerProcess(home=tmp_path / ".cairn", env_extra={"CAIRN_DATABASE_URL": url})
        worker.start()
        try:
            own_server.shut_down()
            try:
                with silent_listener(own_server.port):
                    text = worker.cli("status")
                    again = worker.cli("status", "--json")  # the first probe is still stuck
            finally:
                own_server.start(own_server.port)
            assert text.returncode == 1, (text.stdout, text.stderr)
            assert f"running, pid {worker.pid}" in text.stdout
            assert "DATABASE UNREACHABLE: the team database postgresql://" in text.stdout
            assert "does not answer" in text.stdout
            assert again.returncode == 1 and json.loads(again.stdout)["ok"] is False
            # Back by itself once the stuck connection attempts have given up.
            wait_for(lambda: worker.request("GET", "/api/status")[1]["ok"] is True, timeout=30)
        finally:
            worker.stop()
