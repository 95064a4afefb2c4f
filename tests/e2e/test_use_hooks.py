"""Learning from use through real hook processes: a memory injected at a prompt, the file it
names read by the agent, the turn's Stop; the worker records the memory as used, then as
contradicted when the user's next prompt corrects it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.hook_runner import base, hook_env, run_hook, tool_payload
from tests.e2e.worker_process import WorkerProcess

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

SID = "sess-use-e2e"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "work" / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / "billing").mkdir()
    (repo / "billing" / "exports.py").write_text("BOM = '\\ufeff'\n")
    return repo


def remember(worker: WorkerProcess, project: Path, content: str) -> int:
    body = {"kind": "fact", "content": content, "project": str(project)}
    status, saved = worker.request("POST", "/api/memories", body)
    assert status == 201, saved
    return int(saved["id"])


def given(stdout: str) -> str:
    return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"]) if stdout else ""


def test_the_turn_end_records_what_the_agent_used(worker: WorkerProcess, project: Path) -> None:
    env = hook_env(worker.home, CAIRN_PORT=str(worker.port))
    used = remember(
        worker, project, "Invoice exports are UTF-8 with a BOM, written in billing/exports.py"
    )
    for other in ("Deploys go out through GitHub Actions", "Emails are sent with Postmark"):
        remember(worker, project, other)
    start = {**base(SID, project, "SessionStart"), "source": "startup"}
    assert run_hook("session-start", start, env).returncode == 0
    prompt = {
        **base(SID, project, "UserPromptSubmit"),
        "prompt": "Are the invoice exports written as UTF-8 with a BOM?",
    }
    result = run_hook("user-prompt-submit", prompt, env)
    assert result.returncode == 0, result.stderr
    context = given(result.stdout)
    assert "billing/exports.py" in context
    read = tool_payload(
        SID, project, "Read", {"file_path": f"{project}/billing/exports.py"}, {"type": "text"}, "t1"
    )
    assert run_hook("post-tool-use", read, env).returncode == 0
    stop = {**base(SID, project, "Stop"), "stop_hook_active": False}
    stop["last_assistant_message"] = "Yes: the exports keep their byte order mark."
    assert run_hook("stop", stop, env).returncode == 0

    status, record = worker.request("GET", f"/api/use/memory/{used}")
    assert status == 200, record
    assert (record["shown"], record["used"]) == (1, 1)
    assert record["last_used"]["evidence"] == "read billing/exports.py"
    assert record["last_used"]["session_id"] == SID

    correction = {
        **base(SID, project, "UserPromptSubmit"),
        "prompt": "No, that's outdated: invoice exports are plain UTF-8 now, without a BOM",
    }
    assert run_hook("user-prompt-submit", correction, env).returncode == 0
    status, record = worker.request("GET", f"/api/use/memory/{used}")
    assert (record["shown"], record["used"], record["contradicted"]) == (1, 0, 1)
    status, session = worker.request("GET", f"/api/sessions/{SID}")
    assert status == 200, session
    mine = [g for g in session["given"] if (g["kind"], g["id"]) == ("memory", used)]
    assert mine[0]["outcome"] == "contradicted" and "utf-8" in mine[0]["evidence"]


def test_an_answer_read_from_the_transcript_counts_as_use(
    worker: WorkerProcess, project: Path, tmp_path: Path
) -> None:
    """A Stop without `last_assistant_message` (older Claude Code builds): the hook reads the
    closing message from the transcript, and an answer that names the memory's setting is use."""
    env = hook_env(worker.home, CAIRN_PORT=str(worker.port))
    for other in ("Deploys go out through GitHub Actions", "Emails are sent with Postmark"):
        remember(worker, project, other)
    mid = remember(worker, project, "Invoice exports set EXPORT_CHARSET to utf-8-sig for Excel")
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("")
    sid = "sess-use-transcript"
    prompt = {
        **base(sid, project, "UserPromptSubmit", transcript),
        "prompt": "Which charset do the invoice exports use for Excel?",
    }
    assert "EXPORT_CHARSET" in given(run_hook("user-prompt-submit", prompt, env).stdout)
    answer = {"type": "text", "text": "They use EXPORT_CHARSET=utf-8-sig, so Excel reads it."}
    record = {"type": "assistant", "message": {"content": [answer], "stop_reason": "end_turn"}}
    transcript.write_text(json.dumps(record) + "\n")
    stop = {**base(sid, project, "Stop", transcript), "stop_hook_active": False}
    assert run_hook("stop", stop, env).returncode == 0
    status, found = worker.request("GET", f"/api/use/memory/{mid}")
    assert status == 200, found
    assert found["used"] == 1 and found["last_used"]["evidence"] == "the answer says EXPORT_CHARSET"
