"""The load scenario, CI-sized (8 sessions x CAIRN_LOAD_EVENTS hooks, default 25; the full
8 x 1,000 run is bench/load.py): nothing lost or doubled, every SSE client saw every event once
and in order, searches kept answering. Speed is reported by the bench, not asserted here. On both
backends: the worker over its home's SQLite file, and over a team database."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.backends import process_store, value
from tests.e2e.load_scenario import run_load

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

SESSIONS = 8


def test_hooks_sse_and_search_under_load(tmp_path: Path, backend: str) -> None:
    events = int(os.environ.get("CAIRN_LOAD_EVENTS", "25"))
    url = os.environ.get("CAIRN_DATABASE_URL", "")
    team = {"CAIRN_DATABASE_URL": url} if url else {}
    result = run_load(
        tmp_path, sessions=SESSIONS, events=events, sse_clients=4, search_every=0.1, env_extra=team
    )
    assert result.hook_nonzero_exits == 0
    assert result.lost == 0 and result.duplicated == 0
    assert result.sse_missing == [0, 0, 0, 0], result.as_dict()
    assert result.sse_out_of_order == [0, 0, 0, 0]
    assert result.searches > 0 and result.search_errors == 0
    # What the API listed is what the worker's own database holds: one row per hook event.
    with process_store({"CAIRN_HOME": str(tmp_path / "cairn-home"), **team}) as store:
        assert store.backend == backend
        stored = value(store, "SELECT COUNT(*) FROM observations WHERE session_id LIKE 'load-s%'")
        assert stored == SESSIONS * events
