"""Learning from use through the API: a turn's injections judged at its end (Stop's summarize),
a correcting prompt, an explicit report, an item's record, and bad input."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

pytestmark = pytest.mark.both_backends

P = "/repo/shop"
S = "sess-use-1"
MEMORY = "Invoice exports are written as UTF-8 with a BOM in billing/exports.py (Excel needs it)"
PROMPT = "Are the invoice exports written as UTF-8 with a BOM?"
OTHERS = (
    "Deploys go out from the main branch through GitHub Actions",
    "The test suite runs with pytest -x in CI",
    "Customer emails are sent through Postmark",
)


def remember(client: TestClient, content: str = MEMORY) -> int:
    for other in OTHERS:  # a project of a few memories, as the words are weighed in it
        client.post("/api/memories", json={"kind": "fact", "content": other, "project": P})
    r = client.post("/api/memories", json={"kind": "fact", "content": content, "project": P})
    assert r.status_code in (200, 201), r.text
    return int(r.json()["id"])


def ask(client: TestClient, text: str, session: str = S) -> dict[str, Any]:
    body = {"session_id": session, "project": P, "text": text, "context": {}}
    r = client.post("/api/prompts", json=body)
    assert r.status_code == 201, r.text
    context: dict[str, Any] = r.json()["context"]
    return context


def given(context: dict[str, Any]) -> set[tuple[str, int]]:
    return {(i["kind"], int(i["id"])) for i in context.get("items") or []}


def observe(client: TestClient, title: str, files: list[str], session: str = S) -> None:
    body = {"session_id": session, "project": P, "type": "research", "title": title}
    body |= {"files": files, "tool_name": "Read"}
    r = client.post("/api/observations", json=body)
    assert r.status_code == 201, r.text


def stop(client: TestClient, message: str | None = None, session: str = S) -> None:
    body = {} if message is None else {"last_assistant_message": message}
    r = client.post(f"/api/sessions/{session}/summarize", json=body)
    assert r.status_code in (200, 201), r.text


def record(client: TestClient, mid: int) -> dict[str, Any]:
    r = client.get(f"/api/use/memory/{mid}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_reading_the_file_a_memory_names_is_use(client: TestClient) -> None:
    mid = remember(client)
    assert ("memory", mid) in given(ask(client, PROMPT))
    assert record(client, mid)["shown"] == 0  # not judged until the turn ends
    observe(client, "Read billing/exports.py", ["billing/exports.py"])
    stop(client, "The exports are UTF-8.")
    found = record(client, mid)
    assert (found["shown"], found["used"], found["ignored"]) == (1, 1, 0)
    assert found["last_used"]["evidence"] == "read billing/exports.py"
    assert found["last_used"]["session_id"] == S


def test_a_turn_that_does_nothing_with_it_ignores_it(client: TestClient) -> None:
    mid = remember(client)
    assert ("memory", mid) in given(ask(client, PROMPT))
    observe(client, "Read README.md", ["README.md"])
    stop(client, "I looked around.")
    found = record(client, mid)
    assert (found["shown"], found["used"], found["ignored"]) == (1, 0, 1)
    assert found["last_used"] is None


def test_the_next_prompt_judges_a_turn_without_a_stop_and_may_correct_it(
    client: TestClient,
) -> None:
    mid = remember(client)
    assert ("memory", mid) in given(ask(client, PROMPT))
    # No Stop (an older client, an interrupted turn): the next prompt judges the turn first.
    ask(client, "No, that's outdated: the invoice exports are plain UTF-8 now, no BOM")
    found = record(client, mid)
    assert (found["shown"], found["contradicted"]) == (1, 1)


def test_an_editor_may_report_the_outcome(client: TestClient) -> None:
    mid = remember(client)
    assert ("memory", mid) in given(ask(client, PROMPT))
    r = client.post(
        f"/api/use/memory/{mid}", json={"outcome": "used", "evidence": "applied in the diff"}
    )
    assert r.status_code == 200, r.text
    assert r.json() == {
        "session_id": S,
        "kind": "memory",
        "id": mid,
        "outcome": "used",
        "evidence": "applied in the diff",
    }
    assert record(client, mid)["last_used"]["evidence"] == "applied in the diff"
    # Named session: that injection; the default evidence says who judged.
    again = client.post(f"/api/use/memory/{mid}", json={"outcome": "ignored", "session_id": S})
    assert again.status_code == 200 and again.json()["evidence"] == "reported by the client"
    assert record(client, mid)["ignored"] == 1


def test_bad_reports_are_clear_errors(client: TestClient) -> None:
    mid = remember(client)
    bad = client.post(f"/api/use/memory/{mid}", json={"outcome": "x"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "outcome"
    missing = client.post(f"/api/use/memory/{mid}", json={"evidence": "?"})
    assert missing.status_code == 400 and missing.json()["error"]["field"] == "outcome"
    never = client.post(f"/api/use/memory/{mid}", json={"outcome": "used"})
    assert never.status_code == 404 and "was never given" in never.json()["error"]["message"]
    elsewhere = client.post(f"/api/use/memory/{mid}", json={"outcome": "used", "session_id": "x"})
    assert elsewhere.status_code == 404 and "in session 'x'" in elsewhere.json()["error"]["message"]
    kind = client.get(f"/api/use/thing/{mid}")
    assert kind.status_code == 400 and kind.json()["error"]["field"] == "kind"
    assert client.post(f"/api/use/thing/{mid}", json={"outcome": "used"}).status_code == 400
    assert client.get("/api/use/memory/999999").status_code == 404


def test_a_teammate_s_evidence_stays_private_on_a_team_database(
    client: TestClient, backend: str
) -> None:
    """The evidence names a session's files and commands, private to its author on a team
    database: another reader sees that the item was used, not what the session touched."""
    mid = remember(client)
    body = {"session_id": "mate", "project": P, "text": PROMPT, "context": {}, "author": "mate@x"}
    r = client.post("/api/prompts", json=body)
    assert r.status_code == 201 and ("memory", mid) in given(r.json()["context"])
    observe(client, "Read billing/exports.py", ["billing/exports.py"], session="mate")
    stop(client, "Done.", session="mate")
    found = record(client, mid)
    assert found["used"] == 1
    session = client.get("/api/sessions/mate").json()
    mine = next(g for g in session["given"] if g["id"] == mid)
    if backend == "postgres":  # a team database: this worker reads as its own author
        assert found["last_used"]["evidence"] == mine["evidence"] == "in a teammate's session"
    else:  # one user's SQLite store: nothing is private
        assert found["last_used"]["evidence"] == mine["evidence"] == "read billing/exports.py"


def test_a_correction_concerns_the_turn_before_it_only(client: TestClient) -> None:
    mid = remember(client)
    assert ("memory", mid) in given(ask(client, PROMPT))
    stop(client, "Looked into it.")
    later = given(ask(client, "Does the test suite run with pytest -x in CI?"))
    assert ("memory", mid) not in later and later  # another item, another turn
    stop(client, "Yes.")
    ask(client, "No, that's outdated: invoice exports are plain UTF-8 now, without a BOM")
    assert record(client, mid)["contradicted"] == 0  # two turns back: not what it corrects
