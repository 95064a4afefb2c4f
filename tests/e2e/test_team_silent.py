"""A team database gone silent (every process of the test's own server stopped with SIGSTOP: the
kernel accepts, nothing answers) under a real worker driven by real hook processes. The first
hook meets the silence and waits out its budget; once the worker knows, every later hook is
answered 503 at once and spools (docs/team.md, faults); back (SIGCONT), the spool
replays by itself and every event is stored exactly once.

"At once" is asserted as what the hook saw, never as a duration: a hook logs "answered 503" only
when the worker answered within its budget, and "worker unavailable" when it waited it out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pg
from tests.e2e.hook_runner import wait_for
from tests.e2e.hook_sessions import hook_env, marker, marker_counts, run_hook, start_payload
from tests.e2e.hook_sessions import tool_payload as event_payload
from tests.e2e.team_checkout import PROJECT, checkout
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

LATER = 4  # hooks run once the worker knows the database is silent
HANG_S = 60.0  # a guard against a stuck test, not a speed aim


@pytest.fixture
def own_server() -> Iterator[pg.PostgresServer]:
    """A server of this test's own: freezing it stops no other test's database."""
    with pg.throwaway_server() as server:
        try:
            yield server
        finally:
            server.thaw()


def status_of(worker: WorkerProcess) -> dict[str, Any]:
    status, body = worker.request("GET", "/api/status", timeout=HANG_S)
    assert status == 200, body
    return dict(body)


def test_hooks_spool_at_once_while_the_team_database_is_silent_and_replay_once_back(
    own_server: pg.PostgresServer, tmp_path: Path
) -> None:
    with own_server.database() as url:
        # The periodic replay is out of the picture: only the database's return replays.
        worker = WorkerProcess(
            home=tmp_path / ".cairn",
            env_extra={
                "CAIRN_DATABASE_URL": url,
                "CAIRN_AUTHOR": "ann@acme.dev",  # tool observations are private to their author
                "CAIRN_SPOOL_REPLAY_SECONDS": "3600",
            },
        )
        worker.start()
        try:
            repo = checkout(tmp_path / "work" / "app", "ann@acme.dev")
            env = hook_env(worker.home, CAIRN_AUTOSTART="0", CAIRN_DATABASE_URL=url)
            session = "s-silent"

            def hook(i: int) -> None:
                run = run_hook("post-tool-use", event_payload(session, repo, i), env, HANG_S)
                assert run.exit_code == 0, run.stderr

            assert run_hook("session-start", start_payload(session, repo), env).exit_code == 0
            hook(0)  # stored as usual
            own_server.freeze()
            try:
                hook(1)  # meets the silence: waits its budget, then spools
                wait_for(lambda: status_of(worker)["database"]["breaker"]["state"] == "open")
                for i in range(2, 2 + LATER):
                    hook(i)
                # What the API says meanwhile: the one error shape, saying what and why.
                status, body = worker.request(
                    "POST",
                    "/api/observations",
                    {"project": PROJECT, "type": "command", "title": "$ make"},
                )
                assert status == 503 and body["error"]["code"] == "unavailable", body
                assert "refused at once until it answers again" in body["error"]["message"]
                degraded = status_of(worker)
            finally:
                own_server.thaw()

            assert degraded["ok"] is False and degraded["database"]["reachable"] is False
            assert "is unreachable since" in degraded["database"]["error"]
            assert degraded["services"]["spool"]["waiting_events"] == 1 + LATER
            log = (worker.home / "logs" / "hooks.log").read_text()
            assert log.count("worker unavailable") == 1, log  # the first hook only
            assert log.count("/api/observations answered 503; spooling") == LATER, log

            # Back: the breaker finds it and the spool replays at once, by itself.
            wait_for(lambda: status_of(worker)["services"]["spool"]["waiting_events"] == 0)
            spool = status_of(worker)["services"]["spool"]
            assert spool["replayed"] == 1 + LATER and spool["duplicates"] == 0, spool
            assert marker_counts(worker, session) == {
                marker(session, i): 1 for i in range(2 + LATER)
            }
            back = status_of(worker)
            assert back["ok"] is True and back["database"]["breaker"]["state"] == "closed"
            assert back["database"]["breaker"]["trips"] == 1
        finally:
            worker.stop()
