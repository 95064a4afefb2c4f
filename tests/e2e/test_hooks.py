"""Real hook processes, real-shaped payloads, a real worker: capture, injection, spool, auto-start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.backends import process_counts
from tests.e2e.hook_runner import (
    HANG_GUARD,
    HookResult,
    base,
    hook_env,
    pid_running,
    run_hook,
    stop_spawned_worker,
    tool_payload,
    wait_for,
)
from tests.e2e.worker_process import WorkerProcess, free_port
from tests.hook_modules import HOOK_SCRIPT

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "work" / "shop-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / ".transcript.jsonl").write_text('{"type":"user"}\n')
    return repo


def env_for(worker: WorkerProcess, **extra: str) -> dict[str, str]:
    return hook_env(worker.home, CAIRN_PORT=str(worker.port), **extra)


def assert_valid_injection(result: HookResult, event: str) -> str:
    assert result.returncode == 0, result.stderr
    out = result.context()
    assert out is not None
    assert set(out) == {"hookSpecificOutput"}
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == event
    text = spec["additionalContext"]
    assert text.startswith("<cairn-context>\n") and text.endswith("\n</cairn-context>")
    assert len(text) < 20_000
    return str(text)


def observations(worker: WorkerProcess, session: str) -> list[dict[str, Any]]:
    status, body = worker.request("GET", f"/api/observations?session_id={session}&limit=500")
    assert status == 200
    return list(reversed(body["items"]))


TOOLS: list[tuple[str, Any, Any, str, str, list[str]]] = [
    # tool, input, response, expected type, expected title, expected files
    (
        "Write",
        {"file_path": "{root}/src/cart.py", "content": "def total():\n    return 0\n"},
        {"type": "create", "filePath": "{root}/src/cart.py"},
        "file_write",
        "Write src/cart.py (2 lines)",
        ["src/cart.py"],
    ),
    (
        "Edit",
        {
            "file_path": "{root}/src/cart.py",
            "old_string": "return 0",
            "new_string": "return sum(x)",
        },
        {"filePath": "{root}/src/cart.py"},
        "file_write",
        "Edit src/cart.py",
        ["src/cart.py"],
    ),
    (
        "MultiEdit",
        {
            "file_path": "{root}/src/tax.py",
            "edits": [
                {"old_string": "a", "new_string": "b"},
                {"old_string": "c", "new_string": "d"},
            ],
        },
        {},
        "file_write",
        "MultiEdit src/tax.py (2 edits)",
        ["src/tax.py"],
    ),
    (
        "NotebookEdit",
        {
            "notebook_path": "{root}/nb/eda.ipynb",
            "new_source": "df.head()",
            "cell_id": "c3",
            "edit_mode": "replace",
        },
        {},
        "file_write",
        "NotebookEdit nb/eda.ipynb (replace cell c3)",
        ["nb/eda.ipynb"],
    ),
    (
        "Bash",
        {"command": "pytest -q tests/test_cart.py", "description": "Run cart tests"},
        {"stdout": "3 passed in 0.1s", "stderr": "", "interrupted": False, "isImage": False},
        "command",
        "Run cart tests",
        [],
    ),
    (
        "Read",
        {"file_path": "{root}/src/db.py"},
        {"type": "text", "file": {"content": "SECRET_BODY"}},
        "research",
        "Read src/db.py",
        ["src/db.py"],
    ),
    (
        "Grep",
        {"pattern": "def checkout", "path": "{root}/src", "output_mode": "files_with_matches"},
        {"mode": "files_with_matches", "filenames": ["{root}/src/cart.py"], "numFiles": 1},
        "research",
        "Grep 'def checkout' in src",
        ["src"],
    ),
    (
        "Glob",
        {"pattern": "**/*.py"},
        {"filenames": ["{root}/src/cart.py"], "numFiles": 1, "truncated": False},
        "research",
        "Glob **/*.py",
        [],
    ),
    ("LS", {"path": "{root}/src"}, "- src/\n  - cart.py\n", "research", "LS src", ["src"]),
    (
        "WebFetch",
        {"url": "https://docs.stripe.com/api/charges", "prompt": "How to refund?"},
        {
            "result": "Create a refund with POST /v1/refunds",
            "code": 200,
            "url": "https://docs.stripe.com",
        },
        "web",
        "Fetch https://docs.stripe.com/api/charges",
        [],
    ),
    (
        "WebSearch",
        {"query": "stripe partial refund api"},
        {"results": [{"title": "Refunds", "url": "x"}]},
        "web",
        "Search the web: stripe partial refund api",
        [],
    ),
    (
        "Task",
        {
            "description": "Find tax callers",
            "prompt": "List every caller of tax()",
            "subagent_type": "Explore",
        },
        {"content": [{"type": "text", "text": "tax() is called from cart.py:12"}]},
        "delegation",
        "Delegate to Explore: Find tax callers",
        [],
    ),
    (
        "mcp__github__create_issue",
        {"title": "Refunds fail"},
        [{"type": "text", "text": "Created #42"}],
        "mcp",
        "MCP github.create_issue",
        [],
    ),
    (
        "ExitPlanMode",
        {"plan": "1. add refunds"},
        "User approved",
        "other",
        "ExitPlanMode: 1. add refunds",
        [],
    ),
]


def fill(value: Any, root: Path) -> Any:
    return json.loads(json.dumps(value).replace("{root}", str(root)))


def test_every_event_and_tool_lands_with_type_title_files(
    worker: WorkerProcess, project: Path
) -> None:
    env = env_for(worker)
    sid = "sess-e2e-1"
    start = run_hook(
        "session-start",
        {**base(sid, project, "SessionStart"), "source": "startup", "model": "claude-sonnet-4-5"},
        env,
    )
    assert start.returncode == 0 and start.stderr == ""
    status, session = worker.request("GET", f"/api/sessions/{sid}")
    assert (
        status == 200
        and session["project"] == str(project)
        and session["project_name"] == "shop-api"
    )

    prompt = {
        **base(sid, project, "UserPromptSubmit"),
        "prompt": "Add partial refunds to the cart <private>customer 4411</private> api_key=sk_live_abcdef0123456789XYZ",
    }
    result = run_hook("user-prompt-submit", prompt, env)
    assert result.returncode == 0
    for i, (tool, tin, resp, *_rest) in enumerate(TOOLS):
        r = run_hook(
            "post-tool-use",
            tool_payload(
                sid, project, tool, fill(tin, project), fill(resp, project), f"toolu_{i:03d}"
            ),
            env,
        )
        assert r.returncode == 0 and r.stdout == "", (tool, r.stdout, r.stderr)
    todo = tool_payload(
        sid,
        project,
        "TodoWrite",
        {
            "todos": [
                {
                    "content": "Add refund endpoint",
                    "status": "in_progress",
                    "activeForm": "Adding refund endpoint",
                },
                {
                    "content": "Write refund tests",
                    "status": "pending",
                    "activeForm": "Writing refund tests",
                },
            ]
        },
        {"oldTodos": [], "newTodos": []},
        "toolu_todo",
    )
    own = tool_payload(
        sid, project, "mcp__cairn__search", {"query": "refunds"}, {"hits": []}, "toolu_own"
    )
    for payload in (todo, own):
        assert run_hook("post-tool-use", payload, env).returncode == 0
    failure = {
        **tool_payload(sid, project, "Bash", {"command": "make deploy"}, None, "toolu_fail"),
        "hook_event_name": "PostToolUseFailure",
        "error": "Exit code 2\nmake: *** [deploy] Error 2",
    }
    assert run_hook("post-tool-use-failure", failure, env).returncode == 0

    got = observations(worker, sid)
    by_tool = {o["tool_name"]: o for o in got if o["meta"]["tool_use_id"] != "toolu_fail"}
    assert "mcp__cairn__search" not in by_tool and "TodoWrite" not in by_tool
    for tool, _tin, _resp, type_, title, files in TOOLS:
        obs = by_tool[tool]
        assert (obs["type"], obs["title"], obs["files"]) == (type_, title, files), tool
        assert obs["project"] == str(project) and obs["meta"]["tool_use_id"]
    assert "SECRET_BODY" not in json.dumps(got)
    assert any(o["title"] == "Run: make deploy (exit 2)" for o in got)

    status, detail = worker.request("GET", f"/api/sessions/{sid}")
    assert [p["text"] for p in detail["prompts"]] == [
        "Add partial refunds to the cart  api_key=[REDACTED:stripe-key]"
    ]
    assert [item["content"] for item in detail["plan"]] == [
        "Add refund endpoint",
        "Write refund tests",
    ]

    compact = {
        **base(sid, project, "PreCompact"),
        "trigger": "manual",
        "custom_instructions": "keep refunds",
    }
    assert run_hook("pre-compact", compact, env).returncode == 0
    stop = {
        **base(sid, project, "Stop"),
        "stop_hook_active": False,
        "last_assistant_message": "Refunds are in; tests next.",
    }
    assert run_hook("stop", stop, env).returncode == 0
    assert run_hook("stop", {**stop, "stop_hook_active": True}, env).returncode == 0  # idempotent
    status, summary = worker.request("GET", f"/api/sessions/{sid}/summary")
    assert status == 200 and summary
    status, detail = worker.request("GET", f"/api/sessions/{sid}")
    assert detail["checkpoint"] is not None

    after = run_hook(
        "session-start", {**base(sid, project, "SessionStart"), "source": "compact"}, env
    )
    text = assert_valid_injection(after, "SessionStart")
    _, api = worker.request(
        "GET", "/api/context?" + _q(project=str(project), session_id=sid, source="compact")
    )
    assert api["tokens"] <= api["budget"]
    assert api["text"].strip() in text

    end = {**base(sid, project, "SessionEnd"), "reason": "prompt_input_exit"}
    assert run_hook("session-end", end, env).returncode == 0
    status, detail = worker.request("GET", f"/api/sessions/{sid}")
    assert detail["status"] == "ended" and detail["end_reason"] == "prompt_input_exit"


def _q(**params: str) -> str:
    from urllib.parse import urlencode

    return urlencode(params)


def test_prompt_injection_matches_the_api_and_refusal_injects_nothing(
    worker: WorkerProcess, project: Path
) -> None:
    env = env_for(worker)
    sid = "sess-ctx"
    run_hook("session-start", {**base(sid, project, "SessionStart"), "source": "startup"}, env)
    for i in range(5):
        run_hook(
            "post-tool-use",
            tool_payload(
                sid,
                project,
                "Bash",
                {
                    "command": f"alembic upgrade head  # migration {i}",
                    "description": "Apply the refunds migration",
                },
                {"stdout": "Running upgrade -> refunds_table", "stderr": ""},
                f"toolu_m{i}",
            ),
            env,
        )
    for prompt in ("How do we apply the refunds migration with alembic?", "zqxv wplk ghrt"):
        # What the worker would inject now (the preview records nothing), then the real hook.
        _, api = worker.request(
            "GET", "/api/context/preview?" + _q(project=str(project), session_id=sid, query=prompt)
        )
        result = run_hook(
            "user-prompt-submit", {**base(sid, project, "UserPromptSubmit"), "prompt": prompt}, env
        )
        assert result.returncode == 0
        if api.get("refused") or not api.get("text"):
            assert result.stdout == ""
        else:
            text = assert_valid_injection(result, "UserPromptSubmit")
            assert api["text"].strip() in text
            assert api["tokens"] <= api["budget"]
    # Subagent events are recorded under the parent session and never get injection.
    sub = {
        **base(sid, project, "UserPromptSubmit"),
        "prompt": "How do we apply the refunds migration?",
        "agent_id": "agent-1",
        "agent_type": "Explore",
    }
    assert run_hook("user-prompt-submit", sub, env).stdout == ""
    tool = {
        **tool_payload(
            sid, project, "Read", {"file_path": str(project / "src/db.py")}, {}, "toolu_sub"
        ),
        "agent_id": "agent-1",
        "agent_type": "Explore",
    }
    assert run_hook("post-tool-use", tool, env).returncode == 0
    sub_obs = [o for o in observations(worker, sid) if o["meta"].get("agent_id") == "agent-1"]
    assert len(sub_obs) == 1 and sub_obs[0]["session_id"] == sid


def test_worker_down_spooled_then_replayed_exactly_once(
    isolated_home: Path, project: Path, backend: str, database_env: dict[str, str]
) -> None:
    worker = WorkerProcess(home=isolated_home, env_extra=database_env)
    worker.port = free_port()
    env = env_for(worker, CAIRN_AUTOSTART="0", **database_env)
    sid = "sess-offline"
    payloads = [("session-start", {**base(sid, project, "SessionStart"), "source": "startup"})]
    payloads.append(
        ("user-prompt-submit", {**base(sid, project, "UserPromptSubmit"), "prompt": "offline work"})
    )
    for i in range(20):
        payloads.append(
            (
                "post-tool-use",
                tool_payload(
                    sid, project, "Bash", {"command": f"echo {i}"}, {"stdout": str(i)}, f"toolu_{i}"
                ),
            )
        )
    for event, payload in payloads:
        result = run_hook(event, payload, env)
        assert result.returncode == 0 and result.stdout == ""
    # A retry of the same tool events (the hook gave up after the worker had them) spools again.
    for event, payload in payloads[2:7]:
        run_hook(event, payload, env)
    spool = isolated_home / "spool" / "events.jsonl"
    assert len(spool.read_text().splitlines()) == 27
    assert not (isolated_home / "worker.json").exists()  # nothing started it

    worker.start()
    try:
        assert worker.backend() == backend
        wait_for(lambda: worker.request("GET", "/api/spool")[1]["backlog"]["events"] == 0)
        got = observations(worker, sid)
        assert sorted(o["title"] for o in got) == sorted(f"Run: echo {i}" for i in range(20))
        _, detail = worker.request("GET", f"/api/sessions/{sid}")
        assert [p["text"] for p in detail["prompts"]] == ["offline work"]
        _, spool_state = worker.request("GET", "/api/spool")
        assert spool_state["duplicates"] == 5 and spool_state["corrupt"] == 0
        # A restart replays nothing again.
        worker.stop()
        worker.start()
        assert len(observations(worker, sid)) == 20
        assert process_counts(worker.env(), backend, ["observations"]) == {"observations": 20}
    finally:
        worker.stop()


def test_slow_worker_spools_and_nothing_is_duplicated(worker: WorkerProcess, project: Path) -> None:
    env = env_for(worker, CAIRN_AUTOSTART="0")
    sid = "sess-slow"
    run_hook("session-start", {**base(sid, project, "SessionStart"), "source": "startup"}, env)
    assert worker.proc is not None
    worker.proc.send_signal(signal.SIGSTOP)  # alive but answering nothing: slow past any budget
    try:
        for i in range(3):
            result = run_hook(
                "post-tool-use",
                tool_payload(
                    sid, project, "Bash", {"command": f"make {i}"}, {"stdout": "ok"}, f"toolu_s{i}"
                ),
                env,
            )
            assert result.returncode == 0
    finally:
        worker.proc.send_signal(signal.SIGCONT)
    spooled = (worker.home / "spool" / "events.jsonl").read_text().splitlines()
    assert len(spooled) == 3
    # Requests the frozen worker had accepted may be served late; the replay must not double them.
    worker.request("POST", "/api/spool/replay", {})
    got = [o["title"] for o in observations(worker, sid)]
    assert sorted(got) == ["Run: make 0", "Run: make 1", "Run: make 2"]


def test_spool_is_bounded_with_counted_drops(
    isolated_home: Path, project: Path, backend: str, database_env: dict[str, str]
) -> None:
    worker = WorkerProcess(home=isolated_home, env_extra=database_env)
    worker.port = free_port()
    env = env_for(worker, CAIRN_AUTOSTART="0", CAIRN_SPOOL_MAX_BYTES="6000", **database_env)
    for i in range(40):
        run_hook(
            "post-tool-use",
            tool_payload(
                "sess-b",
                project,
                "Bash",
                {"command": f"echo {i}"},
                {"stdout": "x" * 100},
                f"toolu_{i}",
            ),
            env,
        )
    files = sorted((isolated_home / "spool").glob("*.jsonl"))
    lines = [line for path in files for line in path.read_text().splitlines()]
    assert sum(path.stat().st_size for path in files) <= 6000
    dropped = json.loads((isolated_home / "spool" / "dropped.json").read_text())["dropped"]
    assert dropped + len(lines) == 40 and dropped > 0
    assert json.loads(lines[-1])["body"]["title"] == "Run: echo 39"  # the newest are kept
    worker.start()
    try:
        assert worker.backend() == backend
        state = wait_for(
            lambda: (s := worker.request("GET", "/api/spool")[1])["backlog"]["events"] == 0 and s
        )
        assert state["backlog"]["dropped_by_hooks"] == dropped
        assert len(observations(worker, "sess-b")) == len(lines)
    finally:
        worker.stop()


def test_eight_simultaneous_hooks_start_exactly_one_worker(
    isolated_home: Path, project: Path, backend: str, database_env: dict[str, str]
) -> None:
    port = free_port()
    env = hook_env(isolated_home, CAIRN_PORT=str(port), **database_env)
    procs = []
    for i in range(8):
        payload = json.dumps(
            {**base(f"sess-par-{i}", project, "SessionStart"), "source": "startup"}
        ).encode()
        proc = subprocess.Popen(
            [sys.executable, str(HOOK_SCRIPT), "session-start"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        procs.append((proc, payload))
    try:
        outputs = []
        for proc, payload in procs:
            out, err = proc.communicate(payload, timeout=HANG_GUARD)
            assert proc.returncode == 0, err
            outputs.append(out.decode())
        for out in outputs:
            if out.strip():
                assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        info = wait_for(lambda: _read_json(isolated_home / "worker.json"))
        assert info["port"] == port and pid_running(int(info["pid"]))
        log = (isolated_home / "logs" / "hooks.log").read_text()
        spawns = [line for line in log.splitlines() if "spawned worker" in line]
        assert len(spawns) == 1, spawns
        assert f"pid={info['pid']}" in spawns[0]
        worker = WorkerProcess(home=isolated_home, port=port)
        assert worker.backend() == backend  # the hook passed its environment on

        # Every session lands (directly, or through the spool the worker replays).
        def all_sessions() -> bool:
            worker.request("POST", "/api/spool/replay", {})
            _, body = worker.request("GET", "/api/sessions?limit=50")
            return len([s for s in body["items"] if s["id"].startswith("sess-par-")]) == 8

        wait_for(all_sessions)
    finally:
        stop_spawned_worker(isolated_home)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


@pytest.mark.parametrize(
    "stdin",
    [
        b"",
        b"{not json",
        b"[1, 2, 3]",
        b"\xff\xfe\x00garbage\x80\x81",
        b'{"session_id": null, "tool_name": 5}',
        b"\x00" * 10_000_000,
    ],
    ids=["empty", "malformed", "array", "binary", "wrong-types", "10MB-zeros"],
)
def test_bad_stdin_exits_zero_silently(stdin: bytes, worker: WorkerProcess) -> None:
    env = env_for(worker)
    for event in ("post-tool-use", "user-prompt-submit", "session-start"):
        result = run_hook(event, stdin, env)
        assert result.returncode == 0 and result.stdout == "" and result.stderr == ""


def test_input_with_wrong_field_types_is_logged_once_and_ignored(
    worker: WorkerProcess, project: Path
) -> None:
    """Dropped, never an error shown to the agent, but said in hooks.log so a user can see why."""
    env = env_for(worker)
    no_session = {**base("x", project, "UserPromptSubmit"), "session_id": 42, "prompt": "hi"}
    no_tool = {**base("sess-types", project, "PostToolUse"), "tool_name": ["Bash"]}
    for event, payload in (("user-prompt-submit", no_session), ("post-tool-use", no_tool)):
        result = run_hook(event, payload, env)
        assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    log = (worker.home / "logs" / "hooks.log").read_text()
    assert "UserPromptSubmit: hook input without a session_id string (int); ignored" in log
    assert "PostToolUse: hook input without a tool_name string (list); ignored" in log
    assert observations(worker, "sess-types") == []


@pytest.mark.sqlite_only("no database: the hook's own folders on a fresh machine")
def test_a_first_hook_makes_the_home_and_its_bytecode_folder_private(tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"
    result = run_hook("post-tool-use", b"{not json", hook_env(home, CAIRN_PORT="9"))
    assert result.returncode == 0 and result.stderr == ""
    assert (home / "cache" / "pycache").is_dir()  # the hook modules' bytecode went there
    assert home.stat().st_mode & 0o777 == 0o700
    assert (home / "cache").stat().st_mode & 0o777 == 0o700


def test_non_utf8_input_is_read_with_replacement_characters(
    worker: WorkerProcess, project: Path
) -> None:
    payload = {**base("sess-latin", project, "UserPromptSubmit"), "prompt": "caf\u00e9 cr\u00e8me"}
    raw = json.dumps(payload, ensure_ascii=False).encode("latin-1")  # not UTF-8
    result = run_hook("user-prompt-submit", raw, env_for(worker))
    assert result.returncode == 0 and result.stderr == ""
    if result.stdout:
        assert_valid_injection(result, "UserPromptSubmit")
    _, detail = worker.request("GET", "/api/sessions/sess-latin")
    assert [p["text"] for p in detail["prompts"]] == ["caf\ufffd cr\ufffdme"]


def test_a_lone_surrogate_is_repaired_and_the_event_kept(
    worker: WorkerProcess, project: Path
) -> None:
    """A tool output cut mid-character carries half a UTF-16 pair (`\\ud800` in the JSON): the
    hook replaces it with U+FFFD instead of sending text the worker must refuse, so neither the
    prompt nor the observation is lost (both were dropped before: a 400, not even spooled)."""
    prompt = {**base("sess-surrogate", project, "UserPromptSubmit"), "prompt": "why \ud800 here?"}
    tool = tool_payload(
        "sess-surrogate",
        project,
        "Bash",
        {"command": "tail -c 9 out.log"},
        {"stdout": "caf\udce9 ok \U0001f600", "stderr": ""},
        "toolu_surrogate",
    )
    env = env_for(worker)
    for event, payload in (("user-prompt-submit", prompt), ("post-tool-use", tool)):
        raw = json.dumps(payload).encode()  # ensure_ascii: the surrogate travels as an escape
        assert b"\\ud" in raw
        result = run_hook(event, raw, env)
        assert result.returncode == 0 and result.stderr == ""
    _, detail = worker.request("GET", "/api/sessions/sess-surrogate")
    assert [p["text"] for p in detail["prompts"]] == ["why \ufffd here?"]
    (seen,) = observations(worker, "sess-surrogate")
    assert "caf\ufffd ok \U0001f600" in seen["body"]  # a whole pair (the emoji) is kept


def test_a_long_prompt_keeps_its_end_where_the_question_is(
    worker: WorkerProcess, project: Path
) -> None:
    """A pasted log, then the question: the stored prompt (10,000 characters) keeps both ends
    instead of the first 10,000 characters, which lost the question."""
    log = "".join(f"2024-05-01T10:{i % 60:02d}:00 INFO worker tick {i}\n" for i in range(900))
    question = "so why does the nightly export fail with exit 137 after the tick loop?"
    payload = {**base("sess-long", project, "UserPromptSubmit"), "prompt": log + question}
    assert len(payload["prompt"]) > 30_000
    result = run_hook("user-prompt-submit", payload, env_for(worker))
    assert result.returncode == 0 and result.stderr == ""
    _, detail = worker.request("GET", "/api/sessions/sess-long")
    (stored,) = [p["text"] for p in detail["prompts"]]
    assert len(stored) <= 10_000
    assert stored.startswith("2024-05-01T10:00:00 INFO worker tick 0")
    assert stored.endswith(question) and " … " in stored


def test_huge_tool_response_is_recorded_without_its_output(
    worker: WorkerProcess, project: Path
) -> None:
    payload = tool_payload(
        "sess-huge",
        project,
        "Bash",
        {"command": "cat big.log"},
        {"stdout": "y" * 10_500_000, "stderr": ""},
        "toolu_huge",
    )
    result = run_hook("post-tool-use", payload, env_for(worker))
    assert result.returncode == 0 and result.stdout == ""
    got = observations(worker, "sess-huge")
    assert len(got) == 1 and got[0]["title"] == "Run: cat big.log"
    assert "size cap" in got[0]["body"] and "yyyy" not in got[0]["body"]


def test_disabled_and_excluded_projects_record_nothing(
    worker: WorkerProcess, project: Path
) -> None:
    sid = "sess-off"
    tool = tool_payload(sid, project, "Bash", {"command": "ls"}, {"stdout": ""}, "toolu_x")
    assert run_hook("post-tool-use", tool, env_for(worker, CAIRN_DISABLED="1")).returncode == 0
    assert (
        run_hook(
            "post-tool-use", tool, env_for(worker, CAIRN_EXCLUDE=str(project.parent) + "/*")
        ).stdout
        == ""
    )
    (worker.home / "config.json").write_text(json.dumps({"exclude": [str(project)]}))
    start = {**base(sid, project / "src", "SessionStart"), "source": "startup"}
    assert run_hook("session-start", start, env_for(worker)).stdout == ""
    assert run_hook("post-tool-use", tool, env_for(worker)).returncode == 0
    assert observations(worker, sid) == []
    assert worker.request("GET", f"/api/sessions/{sid}")[0] == 404
    assert not (worker.home / "spool" / "events.jsonl").exists()


def test_hook_never_writes_outside_its_home(
    worker: WorkerProcess, project: Path, tmp_path: Path
) -> None:
    before = set(os.listdir(project))
    run_hook(
        "post-tool-use",
        tool_payload("s", project, "Read", {"file_path": "x"}, {}, "t"),
        env_for(worker),
        cwd=project,
    )
    assert set(os.listdir(project)) == before


def test_a_hook_that_reaches_the_worker_nudges_a_waiting_backlog(
    isolated_home: Path, project: Path, backend: str, database_env: dict[str, str]
) -> None:
    from tests.hook_modules import hook_io

    worker = WorkerProcess(
        home=isolated_home, env_extra={"CAIRN_SPOOL_REPLAY_SECONDS": "600", **database_env}
    )
    worker.start()
    try:
        assert worker.backend() == backend
        wait_for(lambda: worker.request("GET", "/api/spool")[1]["runs"] >= 1)
        # Spooled during a blip (after the start-up replay; the next periodic one is far away).
        record = {
            "v": 1,
            "method": "POST",
            "path": "/api/observations",
            "body": {
                "project": str(project),
                "session_id": "sess-n",
                "type": "note",
                "title": "spooled during a blip",
                "event_id": "blip-1",
            },
        }
        hook_io.spool_append(str(isolated_home), [record])
        live = tool_payload("sess-n", project, "Bash", {"command": "true"}, {"stdout": ""}, "t-n")
        assert run_hook("post-tool-use", live, env_for(worker, **database_env)).returncode == 0
        titles = wait_for(
            lambda: (
                {o["title"] for o in observations(worker, "sess-n")}
                >= {"spooled during a blip", "Run: true"}
            )
        )
        assert titles
    finally:
        worker.stop()


def test_a_stdin_that_never_closes_cannot_hang_the_hook(worker: WorkerProcess) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(HOOK_SCRIPT), "post-tool-use"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(worker),
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b'{"session_id": "s", "tool_name": "Bash"')  # and then nothing, ever
        proc.stdin.flush()
        assert proc.wait(timeout=HANG_GUARD) == 0  # the budget timer ends it
        assert proc.stdout is not None and proc.stdout.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


OTHER_PYTHONS = ["python3.8", "python3.9", "python3.10", "python3.12", "python3.13"]


def find_python(name: str) -> str | None:
    """`name` on PATH if it runs, else from pyenv's versions (shims fail for inactive ones)."""
    import glob
    import shutil

    candidates = [shutil.which(name)]
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        version = name.removeprefix("python")
        candidates += sorted(glob.glob(f"{root}/versions/{version}.*/bin/{name}"))
    for exe in candidates:
        if exe and subprocess.run([exe, "-c", "pass"], capture_output=True).returncode == 0:
            return exe
    return None


@pytest.mark.parametrize("python", OTHER_PYTHONS)
def test_hook_runs_under_older_and_newer_interpreters(
    python: str, worker: WorkerProcess, project: Path
) -> None:
    """A plugin runs the hook with whatever `python3` is on PATH, not Cairn's own interpreter."""
    exe = find_python(python)
    if exe is None:
        pytest.skip(f"{python} is not installed here")
    payload = tool_payload(
        "sess-py",
        project,
        "Bash",
        {"command": "deploy --password=hunter2024"},
        {"stdout": "ok"},
        f"toolu_{python}",
    )
    proc = subprocess.run(
        [exe, str(HOOK_SCRIPT), "post-tool-use"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env_for(worker),
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    got = [
        o for o in observations(worker, "sess-py") if o["meta"]["tool_use_id"] == f"toolu_{python}"
    ]
    assert len(got) == 1 and "hunter2024" not in got[0]["body"]


def test_a_stale_worker_json_pointing_at_another_program_loses_nothing(
    isolated_home: Path, project: Path, tmp_path: Path, backend: str, database_env: dict[str, str]
) -> None:
    """worker.json left by a crash names a port another program now serves (here a static
    file server): the hook must not take its 404 for Cairn's answer."""
    port = free_port()
    other = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: _answers(port))
        isolated_home.mkdir(parents=True, exist_ok=True)
        (isolated_home / "worker.json").write_text(json.dumps({"pid": 999999, "port": port}))
        (isolated_home / "token").write_text("stale-token\n")
        tool = tool_payload(
            "sess-stale", project, "Bash", {"command": "make"}, {"stdout": ""}, "t-s"
        )
        env = hook_env(isolated_home, CAIRN_PORT=str(port), CAIRN_AUTOSTART="0", **database_env)
        assert run_hook("post-tool-use", tool, env).returncode == 0
        spooled = (isolated_home / "spool" / "events.jsonl").read_text().splitlines()
        assert [json.loads(line)["body"]["event_id"] for line in spooled] == ["cc:sess-stale:t-s"]
        # With auto-start, SessionStart brings up a real worker (on a free port, since this one
        # is taken), registers the session and the spooled event is replayed.
        start = {**base("sess-stale", project, "SessionStart"), "source": "startup"}
        started = hook_env(isolated_home, CAIRN_PORT=str(port), **database_env)
        result = run_hook("session-start", start, started)
        assert result.returncode == 0
        info = wait_for(
            lambda: (
                _read_json(isolated_home / "worker.json")
                if ((_read_json(isolated_home / "worker.json") or {}).get("port") != port)
                else None
            )
        )
        worker = WorkerProcess(home=isolated_home, port=int(info["port"]))
        assert worker.backend() == backend

        def landed() -> bool:
            worker.request("POST", "/api/spool/replay", {})
            return [o["title"] for o in observations(worker, "sess-stale")] == ["Run: make"]

        wait_for(landed)
        assert worker.request("GET", "/api/sessions/sess-stale")[0] == 200
    finally:
        stop_spawned_worker(isolated_home)
        other.terminate()
        other.wait(10)


def _answers(port: int) -> bool:
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).close()
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
