"""The load scenario, CI-sized (8 sessions x CAIRN_LOAD_EVENTS hooks, default 25; the full
8 x 1,000 run is bench/load.py): nothing lost or doubled, every SSE client saw every event once
and in order, searches kept answering. Speed is reported by the bench, not asserted here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.load_scenario import run_load

pytestmark = pytest.mark.e2e


def test_hooks_sse_and_search_under_load(tmp_path: Path) -> None:
    events = int(os.environ.get("CAIRN_LOAD_EVENTS", "25"))
    result = run_load(tmp_path, sessions=8, events=events, sse_clients=4, search_every=0.1)
    assert result.hook_nonzero_exits == 0
    assert result.lost == 0 and result.duplicated == 0
    assert result.sse_missing == [0, 0, 0, 0], result.as_dict()
    assert result.sse_out_of_order == [0, 0, 0, 0]
    assert result.searches > 0 and result.search_errors == 0
