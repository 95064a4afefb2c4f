"""`cairn import claude-code` on transcripts the real Claude Code CLI wrote, against what the live
hooks stored for the same sessions.

The CLI (oldest and newest supported) runs real sessions with Cairn's hooks installed (the
harness of test_claude_code.py); then its transcripts are imported into a second, fresh
CAIRN_HOME, and what that worker stores must equal, item for item, what the hooks stored (times
aside). Importing again stores nothing, and importing into the home the hooks wrote to stores
nothing either: those sessions were recorded live. On both backends: the hooks' worker over its
home's SQLite file or a team database, the fresh home over its own file or a second, empty
database of the same server.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.backends import process_store, value
from tests.e2e.messages_api import Text, ToolUse
from tests.e2e.test_claude_code import Setup, fix_calc_session, setup  # noqa: F401 - fixture
from tests.e2e.worker_process import free_port

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e, pytest.mark.claude_code]


def plan_session(s: Setup) -> str:
    """Task tools (the plan) and a delegation to an agent (in the background on 2.1.332)."""
    s.api.script(
        [
            [ToolUse("TaskCreate", {"subject": "Fix calc.add", "description": "off by one"})],
            [ToolUse("TaskUpdate", {"taskId": "1", "status": "completed"})],
            [
                ToolUse(
                    "Agent",
                    {
                        "description": "Find callers",
                        "prompt": "Find the callers of calc.add",
                        "subagent_type": "general-purpose",
                    },
                )
            ],
            # The agent's answer and the session's next turn, in the order their requests
            # arrive (the agent runs alongside). The session's turn may end before the agent's
            # notice starts another: then each turn's answer is stored, live and imported.
            [Text("calc.add is called from check_calc.py only.")],
            [Text("Planned: one task, and an agent finding the callers.")],
            [Text("The agent found one caller.")],
        ]
    )
    events = s.claude("-p", "plan the calc fix; my token is sk-ant-api03-" + "x7" * 20)
    return str(next(e["session_id"] for e in events if e.get("session_id")))


def get(home: Path, path: str, **query: str) -> Any:
    info = json.loads((home / "worker.json").read_text())
    url = f"http://127.0.0.1:{info['port']}{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    request = urllib.request.Request(url)
    request.add_header("Authorization", "Bearer " + (home / "token").read_text().strip())
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def stored(home: Path, session_id: str) -> dict[str, Any]:
    """What a user sees of a session: its observations, prompts, plan and summary."""
    observations = get(home, "/api/observations", session_id=session_id, limit="200")["items"]
    session = get(home, f"/api/sessions/{session_id}")
    summary = get(home, f"/api/sessions/{session_id}/summary")
    plan = session["plan"]
    plan = plan.get("plan", plan) if isinstance(plan, dict) else plan
    return {
        "observations": sorted(
            (o["type"], o["title"], o["body"], tuple(o["files"]), o["tool_name"])
            for o in observations
        ),
        "prompts": [p["text"] for p in session["prompts"]],
        "project": session["project"],
        "plan": plan,
        # The summary lists what was done in the order of the items' times, and times may differ
        # by the hooks' delay (a background agent's launch and its end notice can swap).
        "summary": {
            "request": summary["request"],
            "completed": sorted(summary["completed"]),
            "files": summary["files"],
        },
    }


def import_env(home: Path, user_home: Path, database: dict[str, str]) -> dict[str, str]:
    """`cairn import`'s environment: `home`, and the team database of `database` if any."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update(
        {
            "HOME": str(user_home),
            "CAIRN_HOME": str(home),
            "CAIRN_EMBED_ENABLED": "0",
            "CAIRN_PORT": str(free_port()),
            **database,
        }
    )
    return env


def cairn_import(home: Path, user_home: Path, database: dict[str, str], *extra: str) -> str:
    env = import_env(home, user_home, database)
    done = subprocess.run(
        [sys.executable, "-m", "worker", "import", "claude-code", "--quiet", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def observation_rows(env: dict[str, str], backend: str, sessions: list[str]) -> int:
    """The sessions' observations in the database of a process with `env` (file or team)."""
    with process_store(env) as store:
        assert store.backend == backend
        marks = ", ".join("?" * len(sessions))
        return int(
            value(
                store, f"SELECT COUNT(*) FROM observations WHERE session_id IN ({marks})", sessions
            )
        )


def stop_worker(home: Path) -> None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        os.kill(int(json.loads((home / "worker.json").read_text())["pid"]), signal.SIGTERM)


def test_the_import_stores_what_the_live_hooks_stored(
    setup: Setup,  # noqa: F811 - the fixture
    user_home: Path,
    tmp_path: Path,
    backend: str,
    other_database: dict[str, str],
) -> None:
    sessions = [fix_calc_session(setup), plan_session(setup)]
    setup.settle()
    live = {sid: stored(setup.home, sid) for sid in sessions}
    assert live[sessions[0]]["observations"] and live[sessions[1]]["plan"]
    assert "sk-ant-api03" not in json.dumps(live)
    live_rows = observation_rows(setup.env, backend, sessions)
    assert live_rows == sum(len(live[sid]["observations"]) for sid in sessions)

    fresh = tmp_path / "imported-home"
    try:
        first = cairn_import(fresh, user_home, other_database)
        assert "imported 2 sessions in 1 projects" in first, first
        imported = {sid: stored(fresh, sid) for sid in sessions}
        for sid in sessions:
            assert imported[sid] == live[sid], sid
        fresh_env = import_env(fresh, user_home, other_database)
        assert observation_rows(fresh_env, backend, sessions) == live_rows
        again = cairn_import(fresh, user_home, other_database)
        assert again.startswith("imported 0 sessions"), again
        assert {sid: stored(fresh, sid) for sid in sessions} == imported
        assert observation_rows(fresh_env, backend, sessions) == live_rows
    finally:
        stop_worker(fresh)

    # Into the home the hooks recorded to: nothing new (matched by session and event ids).
    (setup.home / "imports").mkdir(exist_ok=True)
    team = {"CAIRN_DATABASE_URL": setup.env["CAIRN_DATABASE_URL"]} if backend == "postgres" else {}
    out = cairn_import(setup.home, user_home, team)
    assert {sid: stored(setup.home, sid) for sid in sessions} == live, out
    assert observation_rows(setup.env, backend, sessions) == live_rows
