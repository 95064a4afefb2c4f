"""The feed labels each item with the coding agent of its session and filters by it, the live
entries (what an SSE event fetches) included."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

pytestmark = pytest.mark.both_backends

PROJECT = "/p/feed-agents"
HTML = {"accept": "text/html"}


def agents(page: str) -> dict[str, str]:
    """Each feed entry's id (`observation-3`) and the agent its badge names ('' for none)."""
    found = re.findall(r'<li class="feed-item[^"]*" id="([a-z]+-\d+)"(.*?)</summary>', page, re.S)
    badge = re.compile(r'<span class="badge agent agent-[a-z-]+">([^<]*)</span>')
    return {entry: "".join(badge.findall(head)) for entry, head in found}


def record(client: TestClient) -> dict[str, str]:
    """A session of Claude Code and one of Codex CLI (a tool call and a prompt each), a session
    no hook named (an older one), and a memory added by hand: their feed entry ids by name."""
    made: dict[str, str] = {}
    for sid, agent in (("s-claude", "claude-code"), ("s-codex", "codex"), ("s-old", None)):
        body: dict[str, object] = {"session_id": sid, "project": PROJECT}
        if agent:
            body["meta"] = {"source": agent}
        assert client.post("/api/sessions", json=body).status_code == 201
        tool = {"project": PROJECT, "session_id": sid, "type": "command", "title": f"ran {sid}"}
        response = client.post("/api/observations", json=tool)
        assert response.status_code == 201, response.text
        made[f"{sid} tool"] = f"observation-{response.json()['id']}"
        prompt = {"session_id": sid, "project": PROJECT, "text": f"asked in {sid}"}
        response = client.post("/api/prompts", json=prompt)
        assert response.status_code == 201, response.text
        made[f"{sid} prompt"] = f"prompt-{response.json()['id']}"
    memory = {"kind": "fact", "content": "the CI runs on Node 20", "project": PROJECT}
    response = client.post("/api/memories", json=memory)
    assert response.status_code == 201, response.text
    made["memory"] = f"memory-{response.json()['id']}"
    return made


def test_feed_items_name_their_agent_and_filter_by_it(client: TestClient) -> None:
    made = record(client)
    page = client.get("/", headers=HTML).text
    assert agents(page) == {
        made["s-claude tool"]: "Claude Code",
        made["s-claude prompt"]: "Claude Code",
        made["s-codex tool"]: "Codex CLI",
        made["s-codex prompt"]: "Codex CLI",
        made["s-old tool"]: "",
        made["s-old prompt"]: "",
        made["memory"]: "",
    }
    assert '<label for="feed-agent">Agent</label>' in page
    assert '<option value="gemini">Gemini CLI</option>' in page

    only = client.get("/", params={"agent": "codex"}, headers=HTML).text
    assert agents(only) == {made["s-codex tool"]: "Codex CLI", made["s-codex prompt"]: "Codex CLI"}
    assert '<option value="codex" selected>' in only
    assert 'data-agent="codex"' in only  # the live events are filtered alike
    prompts = client.get("/", params={"agent": "codex", "type": "prompt"}, headers=HTML).text
    assert list(agents(prompts)) == [made["s-codex prompt"]]

    none = client.get("/", params={"agent": "cursor"}, headers=HTML).text
    assert agents(none) == {} and "No activity matches these filters" in none
    ignored = client.get("/", params={"agent": "<script>"}, headers=HTML)
    assert ignored.status_code == 200 and len(agents(ignored.text)) == 7  # unknown: no filter


def test_older_pages_keep_the_agent_filter(client: TestClient) -> None:
    made = record(client)
    for n in range(60):  # more Claude Code tool calls than one page holds
        body = {"project": PROJECT, "session_id": "s-claude", "type": "note", "title": f"n{n}"}
        assert client.post("/api/observations", json=body).status_code == 201
    first = client.get("/", params={"agent": "codex"}, headers=HTML).text
    assert "Load older" not in first  # Codex's two items fit on one page
    page = client.get("/", params={"agent": "claude-code"}, headers=HTML).text
    more = re.search(r'hx-get="/feed/items\?([^"]+)"', page)
    assert more is not None and "agent=claude-code" in more.group(1)
    older = client.get("/feed/items?" + more.group(1).replace("&amp;", "&"), headers=HTML).text
    shown = agents(page) | agents(older)
    assert set(shown.values()) == {"Claude Code"}
    assert {made["s-claude tool"], made["s-claude prompt"]} <= set(shown)


def test_a_live_entry_names_its_agent_and_meets_the_agent_filter(client: TestClient) -> None:
    made = record(client)
    kind, _, number = made["s-codex tool"].partition("-")
    live = client.get(f"/feed/item/{kind}/{number}", params={"event": "observation.created"})
    assert agents(live.text) == {made["s-codex tool"]: "Codex CLI"}
    kept = client.get(f"/feed/item/{kind}/{number}", params={"agent": "codex"})
    assert list(agents(kept.text)) == [made["s-codex tool"]]
    dropped = client.get(f"/feed/item/{kind}/{number}", params={"agent": "claude-code"})
    assert dropped.status_code == 200 and dropped.text == ""
    kind, _, number = made["memory"].partition("-")
    unlabelled = client.get(f"/feed/item/{kind}/{number}", params={"agent": "codex"})
    assert unlabelled.text == ""  # a memory of no session is of no agent
