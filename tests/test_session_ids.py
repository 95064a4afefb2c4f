"""Session ids round-trip through the routes: ids that would not ("x/summary", "a//b", "..") are
refused where sessions are created, every accepted id can be fetched by every session route,
and the hooks map any id Claude Code (or another client) sends onto the accepted ones."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.examples import examples
from tests.hook_modules import hook_io
from worker.app import all_endpoints
from worker.ops.fields import SESSION_ID_PATTERN, SESSION_SUBROUTES
from worker.settings import Settings

pytestmark = pytest.mark.both_backends

P = "/p/app"
REFUSED = [
    "x/summary",
    "team/alpha/42/end",
    "a/plan",
    "a//b",
    "/a",
    "a/",
    "/",
    ".",
    "..",
    "a/../b",
    "a/./b",
    "a\\b",
    "a\nb",
    "tab\there",
    "del\x7f",
]
ACCEPTED = [
    "0f8d7a4e-3c55-4b3e-9d0b-6a1f2e9c8b7d",  # what Claude Code sends
    "summary",
    "end",
    "team/alpha/42",
    "x/summary/y",
    "a/summaryx",
    "a/..b",
    "checkpoint",
    "x.summary",
    "...",
    "a b",
    "100 percent",
    "a?b#c&d=e",
    "ünïcödé-🙂",
]


def path_of(session_id: str) -> str:
    return "/api/sessions/" + quote(session_id, safe="")


@pytest.mark.parametrize("sid", REFUSED)
def test_ids_that_cannot_round_trip_are_refused_where_sessions_are_created(
    client: TestClient, sid: str
) -> None:
    creations = [
        client.post("/api/sessions", json={"session_id": sid, "project": P}),
        client.post("/api/prompts", json={"session_id": sid, "project": P, "text": "hi"}),
        client.post(
            "/api/observations",
            json={"session_id": sid, "project": P, "type": "note", "title": "t"},
        ),
        client.post("/api/memories", json={"session_id": sid, "project": P, "content": "c"}),
    ]
    for r in creations:
        assert r.status_code == 400, (sid, r.request.url, r.text)
        error = r.json()["error"]
        assert error["field"] == "session_id"
        assert "must round-trip through /api/sessions/{id}/..." in error["message"]
    # PUT .../plan creates the session it names: the same rule applies to the path.
    if sid.startswith("x/"):
        plan = client.put(
            f"/api/sessions/{sid}/plan",
            json={"plan": [{"content": "x", "status": "pending"}], "project": P},
        )
        assert plan.status_code == 400 and plan.json()["error"]["field"] == "session_id"
    assert client.get("/api/sessions").json()["items"] == []


def round_trips(client: TestClient, sid: str) -> None:
    created = client.post("/api/sessions", json={"session_id": sid, "project": P})
    assert created.status_code in (200, 201), (sid, created.text)
    detail = client.get(path_of(sid))
    assert detail.status_code == 200 and detail.json()["id"] == sid
    plan = client.put(
        path_of(sid) + "/plan", json={"plan": [{"content": "x", "status": "pending"}]}
    )
    assert plan.status_code == 200, plan.text
    assert client.get(path_of(sid) + "/summary").status_code in (200, 404)
    ended = client.post(path_of(sid) + "/end", json={})
    assert ended.status_code == 200 and ended.json()["id"] == sid


@pytest.mark.parametrize("sid", ACCEPTED)
def test_accepted_ids_reach_every_session_route(client: TestClient, sid: str) -> None:
    round_trips(client, sid)
    page = client.get("/sessions/" + quote(sid, safe=""), headers={"accept": "text/html"})
    assert page.status_code == 200


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(sid=st.from_regex(SESSION_ID_PATTERN, fullmatch=True).filter(lambda s: len(s) <= 200))
def test_any_id_the_pattern_accepts_round_trips(client: TestClient, sid: str) -> None:
    try:
        sid.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates are refused as invalid Unicode, before the pattern
    if "\x00" in sid or "%" in sid:
        return  # TestClient unquotes paths twice; ids with "%" are tested on a real worker
    round_trips(client, sid)


@pytest.mark.sqlite_only("no database: the hooks' id mapping is a pure function")
@given(text=st.text(min_size=1, max_size=250))
def test_the_hooks_map_every_id_onto_the_accepted_ones(text: str) -> None:
    sid = hook_io.route_safe_id(text.strip()[:200] or "x")
    assert re.fullmatch(SESSION_ID_PATTERN, sid) and 1 <= len(sid) <= 200
    if re.fullmatch(SESSION_ID_PATTERN, text) and len(text) <= 200:
        assert hook_io.route_safe_id(text) == text  # a good id is kept as it is


def test_the_rule_knows_every_session_route(settings: Settings) -> None:
    prefix = "/api/sessions/{session_id:path}/"
    names = {ep.path[len(prefix) :] for ep in all_endpoints(settings) if ep.path.startswith(prefix)}
    assert names == set(SESSION_SUBROUTES) == set(hook_io.SESSION_SUBROUTES)


@pytest.mark.sqlite_only("no database: the hooks' id mapping is a pure function")
def test_the_mapping_keeps_distinct_ids_distinct() -> None:
    mapped = {hook_io.route_safe_id(s) for s in ("x/summary", "x\\summary", "x_summary", "..")}
    assert len(mapped) == 4 and "x_summary" in mapped
    assert hook_io.route_safe_id("x/summary").startswith("x_summary-")
