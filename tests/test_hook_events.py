"""The hook's normaliser: tool events to typed, titled, capped observations; project identity."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.hook_modules import events, hook_io, run

ROOT = "/home/dev/app"


def post(tool: str, tool_input: Any, response: Any = None, **extra: Any) -> dict[str, Any]:
    payload = {
        "session_id": "sess-1",
        "transcript_path": "/nonexistent/t.jsonl",
        "cwd": ROOT,
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
        "tool_use_id": "toolu_01",
        **extra,
    }
    obs = events.observation(payload, ROOT, ROOT)
    assert obs is not None
    return obs


def test_write_edit_multiedit_notebook_are_file_writes_with_relative_files() -> None:
    w = post("Write", {"file_path": f"{ROOT}/src/app.py", "content": "a\nb\nc\n"})
    assert (w["type"], w["title"], w["files"]) == (
        "file_write",
        "Write src/app.py (3 lines)",
        ["src/app.py"],
    )
    e = post("Edit", {"file_path": f"{ROOT}/README.md", "old_string": "old", "new_string": "new"})
    assert e["title"] == "Edit README.md" and "old: old" in e["body"] and "new: new" in e["body"]
    m = post(
        "MultiEdit",
        {"file_path": "lib/x.py", "edits": [{"old_string": "a", "new_string": "b"}] * 3},
    )
    assert m["title"] == "MultiEdit lib/x.py (3 edits)" and m["files"] == ["lib/x.py"]
    n = post(
        "NotebookEdit",
        {"notebook_path": f"{ROOT}/nb.ipynb", "new_source": "print(1)", "cell_id": "c1"},
    )
    assert n["type"] == "file_write" and n["files"] == ["nb.ipynb"] and "cell c1" in n["title"]
    outside = post("Write", {"file_path": "/etc/hosts", "content": ""})
    assert outside["files"] == ["/etc/hosts"]


def test_bash_records_command_exit_code_head_and_tail() -> None:
    out = "\n".join(f"line {i}" for i in range(2000))
    obs = post(
        "Bash",
        {"command": "pytest -q", "description": "Run the tests"},
        {"stdout": out, "stderr": "warning", "interrupted": False},
    )
    assert obs["type"] == "command" and obs["title"] == "Run the tests"
    assert "line 0" in obs["body"] and "line 1999" in obs["body"] and "line 1000" not in obs["body"]
    failed = events.observation(
        {
            "session_id": "s",
            "tool_name": "Bash",
            "tool_input": {"command": "make"},
            "error": "Exit code 2\nmake: *** [all] Error 2",
            "hook_event_name": "PostToolUseFailure",
        },
        ROOT,
        ROOT,
    )
    assert failed is not None and failed["title"] == "Run: make (exit 2)"
    assert "exit code: 2" in failed["body"]


def test_research_keeps_paths_and_patterns_never_contents() -> None:
    r = post(
        "Read",
        {"file_path": f"{ROOT}/src/db.py", "offset": 10, "limit": 50},
        {"type": "text", "file": {"content": "SECRET FILE CONTENT"}},
    )
    assert r["type"] == "research" and r["title"] == "Read src/db.py (lines 10-59)"
    assert "SECRET FILE CONTENT" not in r["body"] and r["files"] == ["src/db.py"]
    g = post(
        "Grep",
        {"pattern": "def main", "path": f"{ROOT}/src", "glob": "*.py"},
        {"mode": "files_with_matches", "filenames": [f"{ROOT}/src/a.py"], "numFiles": 1},
    )
    assert g["title"] == "Grep 'def main' in src" and "src/a.py" in g["body"]
    gl = post("Glob", {"pattern": "**/*.ts"}, {"filenames": [], "numFiles": 0})
    assert gl["title"] == "Glob **/*.ts"
    ls = post("LS", {"path": f"{ROOT}/docs"}, "- docs/\n  - a.md")
    assert ls["title"] == "LS docs" and "a.md" not in ls["body"]


def test_web_delegation_mcp_and_other() -> None:
    f = post(
        "WebFetch",
        {"url": "https://docs.python.org/3/", "prompt": "summarise"},
        {"result": "Python docs"},
    )
    assert (
        f["type"] == "web"
        and f["title"] == "Fetch https://docs.python.org/3/"
        and "excerpt: Python docs" in f["body"]
    )
    s = post("WebSearch", {"query": "sqlite fts5 bm25"}, {"results": []})
    assert s["title"] == "Search the web: sqlite fts5 bm25"
    nested = {
        "query": "q",
        "results": [
            {
                "tool_use_id": "srv",
                "content": [{"title": "FTS5", "url": "https://sqlite.org/fts5.html"}],
            },
            "a plain summary",
        ],
    }
    s = post("WebSearch", {"query": "fts5"}, nested)
    assert "results: FTS5 - https://sqlite.org/fts5.html" in s["body"]
    t = post(
        "Task",
        {"description": "Find callers", "prompt": "Find all callers", "subagent_type": "Explore"},
        {"content": [{"type": "text", "text": "Found 3 callers"}]},
    )
    assert t["type"] == "delegation" and t["title"] == "Delegate to Explore: Find callers"
    assert "Found 3 callers" in t["body"]
    m = post(
        "mcp__github__create_issue",
        {"title": "bug"},
        {"content": [{"type": "text", "text": "#12"}]},
    )
    assert m["type"] == "mcp" and m["title"] == "MCP github.create_issue"
    o = post("ExitPlanMode", {"plan": "1. do it"}, "ok")
    assert o["type"] == "other" and o["title"] == "ExitPlanMode: 1. do it"


def test_noise_own_mcp_and_todowrite_are_not_observations() -> None:
    for tool in (
        "mcp__cairn__search",
        "mcp__cairn__save_memory",
        "mcp__plugin_cairn_cairn__search",
        "TodoWrite",
        "BashOutput",
    ):
        assert events.observation({"tool_name": tool, "tool_input": {}}, ROOT, ROOT) is None
    todos = {
        "todos": [{"content": "write tests", "status": "in_progress", "activeForm": "Writing"}]
    }
    assert events.plan({"tool_input": todos}) == [
        {"content": "write tests", "status": "in_progress", "activeForm": "Writing"}
    ]


def test_fields_are_capped_and_cleaned() -> None:
    big = "x" * 5000
    obs = post("Write", {"file_path": "a.txt", "content": big + " password=hunter2024"})
    for line in obs["body"].splitlines():
        assert len(line) <= 500 + len("content: ") + 2
    e = post(
        "Edit",
        {
            "file_path": "a",
            "old_string": "token=abc123def",
            "new_string": "<private>pin 1234</private>ok",
        },
    )
    assert "abc123def" not in e["body"] and "1234" not in e["body"] and "new: ok" in e["body"]
    obs = events.observation(
        {"tool_name": "Write", "tool_input": {"file_path": "a", "content": big}},
        ROOT,
        ROOT,
        field_chars=50,
    )
    assert obs is not None and len(obs["body"]) < 80


def test_subagent_tool_events_carry_agent_id_in_meta() -> None:
    obs = post("Read", {"file_path": "x.py"}, agent_id="agent-7", agent_type="Explore")
    assert obs["meta"]["agent_id"] == "agent-7" and obs["meta"]["agent_type"] == "Explore"


def test_tool_events_keep_the_prompt_they_answered() -> None:
    obs = post("Read", {"file_path": "x.py"}, prompt_id="93f2fde5-6612-4c73-8347-e41147fb9aba")
    assert obs["meta"]["prompt_id"] == "93f2fde5-6612-4c73-8347-e41147fb9aba"


def test_event_ids_are_deterministic() -> None:
    payload = {"session_id": "s1", "tool_use_id": "toolu_9"}
    assert (
        events.event_id("tool", payload)
        == events.event_id("tool", dict(payload))
        == "cc:s1:toolu_9"
    )
    p = {"session_id": "s1", "transcript_path": "/nope"}
    assert events.event_id("prompt", p, "hi") == events.event_id("prompt", p, "hi")
    assert events.event_id("prompt", p, "hi") != events.event_id("prompt", p, "ho")


def test_prompt_event_id_changes_as_the_transcript_grows(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    p = {"session_id": "s1", "transcript_path": str(transcript)}
    first = events.event_id("prompt", p, "continue")
    transcript.write_text("{}\n{}\n")
    assert events.event_id("prompt", p, "continue") != first  # same words, a new turn


def test_a_prompt_with_a_prompt_id_is_named_by_it_whatever_the_transcript_size(
    tmp_path: Path,
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    p = {"session_id": "s1", "transcript_path": str(transcript), "prompt_id": "p-7"}
    first = events.event_id("prompt", p, "continue")
    transcript.write_text("{}\n{}\n")
    # The transcript import names the prompt from the transcript's promptId alone.
    assert events.event_id("prompt", p, "continue") == first == "cc:s1:prompt:p-7"


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )


def test_project_root_is_the_repository_top_and_worktrees_map_to_main(tmp_path: Path) -> None:
    repo = tmp_path / "one" / "app"
    (repo / "src" / "deep").mkdir(parents=True)
    _git("init", "-q", cwd=repo)
    (repo / "f").write_text("x")
    _git("add", "f", cwd=repo)
    _git("commit", "-qm", "init", cwd=repo)
    assert events.project_root(str(repo / "src" / "deep")) == str(repo)
    wt = tmp_path / "wt-feature"
    _git("worktree", "add", "-q", str(wt), cwd=repo)
    (wt / "pkg").mkdir()
    assert events.project_root(str(wt / "pkg")) == str(repo)
    other = tmp_path / "two" / "app"  # same base name, another repository
    other.mkdir(parents=True)
    _git("init", "-q", cwd=other)
    assert events.project_root(str(other)) == str(other) != str(repo)
    plain = tmp_path / "plain" / "dir"
    plain.mkdir(parents=True)
    assert events.project_root(str(plain)) == str(plain)


def test_submodule_is_its_own_project(tmp_path: Path) -> None:
    sub = tmp_path / "super" / "vendor" / "lib"
    sub.mkdir(parents=True)
    (tmp_path / "super" / ".git" / "modules" / "lib").mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    assert events.project_root(str(sub)) == str(sub)


def test_exclusion_globs(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = {"exclude": ["~/clients/*", "/srv/secret"]}
    home = os.path.expanduser("~")
    assert run.excluded([f"{home}/clients/acme/src"], cfg)
    assert run.excluded(["/srv/secret/sub"], cfg)
    assert not run.excluded(["/srv/public"], cfg)
    monkeypatch.setenv("CAIRN_EXCLUDE", "/opt/a*,/tmp/z")
    assert run.excluded(["/opt/abc"], {}) and run.excluded(["/tmp/z/y"], {})


def test_json_helpers_roundtrip() -> None:
    value = {"a": [1, 2.5, None, True], "b": "é\ud800\n", "c": {"d": ""}}
    text = hook_io.dumps(value)
    assert text.isascii()
    assert hook_io.loads(text) == value
    for bad in ("", "{", "[1,]", "{} x", "nul", "\x00"):
        with pytest.raises(ValueError):
            hook_io.loads(bad)


def test_truncated_input_salvages_the_small_fields() -> None:
    raw = (
        '{"session_id":"s9","cwd":"/r","hook_event_name":"PostToolUse","tool_name":"Bash",'
        '"tool_input":{"command":"cat big.log"},"tool_response":{"stdout":"' + "x" * 1000
    ).encode()
    payload = run.parse_payload(raw, truncated=True)
    assert payload is not None
    assert payload["session_id"] == "s9" and payload["tool_input"] == {"command": "cat big.log"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=20,
)
tools = st.sampled_from(
    [
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "Bash",
        "Read",
        "Grep",
        "Glob",
        "LS",
        "WebFetch",
        "WebSearch",
        "Task",
        "TodoWrite",
        "mcp__x__y",
        "mcp__cairn__search",
        "Weird",
    ]
) | st.text(max_size=20)


@settings(max_examples=examples(400), deadline=None)
@given(
    tool=tools,
    tool_input=json_values,
    response=json_values,
    error=json_values,
    cwd=st.text(max_size=30),
)
def test_normaliser_never_raises_and_respects_the_api(
    tool: str, tool_input: Any, response: Any, error: Any, cwd: str
) -> None:
    payload = {
        "session_id": "s",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
        "error": error,
        "tool_use_id": "t",
    }
    obs = events.observation(payload, "/r", cwd)
    events.plan(payload)
    if obs is None:
        return
    assert obs["type"] in ("file_write", "command", "research", "web", "delegation", "mcp", "other")
    assert 1 <= len(obs["title"]) <= 500 and "\n" not in obs["title"]
    assert len(obs["files"]) <= 50
    assert len(hook_io.dumps(obs["meta"])) < 4096
    hook_io.dumps(obs)  # always encodable


events_names = st.sampled_from(sorted(run.BUDGETS))


@settings(max_examples=examples(300), deadline=None)
@given(
    event=events_names,
    payload=st.dictionaries(
        st.sampled_from(
            [
                "session_id",
                "prompt",
                "source",
                "tool_name",
                "tool_input",
                "tool_response",
                "tool_use_id",
                "agent_id",
                "last_assistant_message",
                "trigger",
                "custom_instructions",
                "reason",
                "model",
                "error",
                "_truncated",
            ]
        ),
        json_values,
        max_size=10,
    ),
)
def test_every_event_builds_encodable_requests_without_raising(
    event: str, payload: dict[str, Any]
) -> None:
    payload["session_id"] = "s"
    hook = run.Hook(event, "/nonexistent-home")
    run.plan_requests(hook, payload, "/r", "/r", 500)
    for request in hook.pending:
        assert request.method in ("POST", "PUT") and request.path.startswith("/api/")
        assert hook_io.loads(hook_io.dumps(request.record(event)))["body"] is not None


def test_a_private_block_opened_before_the_kept_tail_stays_private() -> None:
    out = "<private>" + "s3cret-client-name " * 100 + "</private>\nbuild ok"
    obs = post("Bash", {"command": "make"}, {"stdout": "start\n" + out, "stderr": ""})
    assert "s3cret" not in obs["body"] and "build ok" in obs["body"]


def test_the_tail_of_a_long_private_key_is_redacted() -> None:
    key = "\n".join(["MIIEpAIBAAKCAQEA7bq0Vx1yZ2abcdefghijklmnopqrstuvwxyz0123"] * 40)
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{key}\n-----END RSA PRIVATE KEY-----\ndone"
    obs = post("Bash", {"command": "cat id_rsa"}, {"stdout": pem, "stderr": ""})
    assert "MIIEpA" not in obs["body"] and "done" in obs["body"]


def test_todowrite_becomes_a_timestamped_plan_request() -> None:
    hook = run.Hook("PostToolUse", "/nonexistent-home")
    payload = {
        "session_id": "s1",
        "tool_name": "TodoWrite",
        "tool_use_id": "toolu_t",
        "tool_input": {"todos": [{"content": "ship", "status": "done?"}]},
    }
    run.plan_requests(hook, payload, "/r", "/r", 500)
    (request,) = hook.pending
    assert (request.method, request.path) == ("PUT", "/api/sessions/s1/plan")
    assert request.body is not None
    assert request.body["plan"] == [{"content": "ship", "status": "pending"}]
    assert str(request.body["updated_at"]).endswith("Z") and request.body["project"] == "/r"


# ---------------------------------------------------- shapes seen from the real CLI 2.1.197 / 2.1.332


def test_grep_over_the_project_root_names_no_file() -> None:
    g = post(
        "Grep",
        {"pattern": "def get", "path": "."},
        {"mode": "files_with_matches", "filenames": ["http.py"], "numFiles": 1},
    )
    assert g["title"] == "Grep 'def get'" and g["files"] == []
    assert "files: http.py" in g["body"]


def test_agent_results_synchronous_and_in_the_background() -> None:
    tin = {
        "description": "Find callers",
        "prompt": "Find callers of get",
        "subagent_type": "Explore",
    }
    done = post(  # 2.1.197
        "Agent",
        tin,
        {
            "status": "completed",
            "agentId": "a91",
            "content": [{"type": "text", "text": "3 callers"}],
        },
    )
    assert done["type"] == "delegation" and "result: 3 callers" in done["body"]
    assert "agentId" not in done["body"]
    launched = post(  # 2.1.332
        "Agent",
        tin,
        {"isAsync": True, "status": "async_launched", "agentId": "a78", "outputFile": "/tmp/x"},
    )
    assert launched["title"] == "Delegate to Explore: Find callers (in the background)"
    assert "outputFile" not in launched["body"] and "result:" not in launched["body"]


NOTIFICATION = (
    "<task-notification>\n<task-id>a78</task-id>\n<tool-use-id>toolu_7</tool-use-id>\n"
    "<output-file>/tmp/x.output</output-file>\n<status>completed</status>\n"
    '<summary>Agent "Find callers" finished</summary>\n<note>may notify again</note>\n'
    "<result>get() is called from app.py and cli.py</result>\n</task-notification>"
)


def test_a_task_notification_is_an_agent_result_not_a_prompt() -> None:
    hook = run.Hook("UserPromptSubmit", "/nonexistent-home")
    payload = {"session_id": "s1", "prompt": NOTIFICATION, "hook_event_name": "UserPromptSubmit"}
    run.plan_requests(hook, payload, "/r", "/r", 500)
    (request,) = hook.pending
    assert (request.method, request.path) == ("POST", "/api/observations")
    body = request.body
    assert body is not None
    assert body["type"] == "delegation" and body["title"] == 'Agent "Find callers" finished'
    assert body["body"] == "result: get() is called from app.py and cli.py"
    assert body["meta"]["result_of"] == "cc:s1:toolu_7"  # type: ignore[index]
    assert events.task_notification("please fix <task-notification> parsing") is None


def test_new_tools_map_to_sensible_types() -> None:
    assert post("Skill", {"skill": "code-review"}, "ok")["title"] == "Use skill code-review"
    assert post("Skill", {"skill": "x"})["type"] == "research"
    for tool in ("Workflow", "SendMessage"):
        assert post(tool, {"description": "d"})["type"] == "delegation"
    for tool in ("TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "ToolSearch", "CronList"):
        assert events.observation({"tool_name": tool, "tool_input": {}}, ROOT, ROOT) is None
    assert post("EnterWorktree", {"name": "fix"})["type"] == "other"


def test_failure_event_reads_is_interrupt_at_top_level() -> None:
    payload = {
        "session_id": "s",
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "sleep 100"},
        "error": "Interrupted by user",
        "is_interrupt": True,
        "duration_ms": 900,
    }
    obs = events.observation(payload, ROOT, ROOT)
    assert obs is not None and obs["title"] == "Run: sleep 100 (interrupted)"
    assert "error: Interrupted by user" in str(obs["body"])


def test_a_budget_alarm_during_the_spool_write_spools_each_event_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The alarm strikes while the records are being fsynced (a loaded machine): the handler's
    grace write must find nothing pending, so the spool holds the event once, not twice."""
    import signal
    import time

    home = str(tmp_path / "home")
    hook = run.Hook("PostToolUse", home)
    hook.autostart = False
    hook.pending = [run.Request("POST", "/api/observations", {"title": "Run: make"})]
    real_append = hook_io.spool_append

    def slow_append(home: str, records: list[dict[str, object]]) -> int:
        written = real_append(home, records)
        time.sleep(0.3)  # the alarm comes due here, after the write
        return written

    monkeypatch.setattr(hook_io, "spool_append", slow_append)

    previous = signal.signal(signal.SIGALRM, hook.on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        try:
            hook.spool_pending()
            time.sleep(0.5)
        except run.BudgetExceeded:
            hook.spool_pending()  # what run() does when the budget runs out
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    lines = (tmp_path / "home" / "spool" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 1 and hook.pending == []


def test_a_spool_write_stuck_past_its_grace_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that never ends (a lock nobody releases) still ends the hook: one extension of
    WRITE_GRACE, then the alarm is final, so the agent is never hung."""
    import signal
    import time

    hook = run.Hook("PostToolUse", str(tmp_path / "home"))
    hook.autostart = False
    hook.pending = [run.Request("POST", "/api/observations", {"title": "Run: make"})]
    monkeypatch.setattr(run, "WRITE_GRACE", 0.1)
    monkeypatch.setattr(hook_io, "spool_append", lambda home, records: time.sleep(30))
    previous = signal.signal(signal.SIGALRM, hook.on_alarm)
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(run.BudgetExceeded):
            hook.spool_pending()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert hook.overdue and time.monotonic() - started < 25


def test_a_hook_that_starts_late_still_spools_its_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine the budget can run out before the event is even read and built: the
    alarm waits for that (one extension), then the event goes to the spool instead of nowhere."""
    import json
    import time

    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    monkeypatch.setenv("CAIRN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CAIRN_AUTOSTART", "0")
    monkeypatch.setitem(run.BUDGETS, "PostToolUse", 0.05)
    payload = {
        "session_id": "s-late",
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make lint"},
        "tool_response": {"stdout": "ok"},
        "tool_use_id": "toolu_late",
    }

    def slow_stdin(cap: int) -> tuple[bytes, bool]:
        time.sleep(0.3)  # the process was scheduled late: the budget is gone meanwhile
        return json.dumps(payload).encode(), False

    monkeypatch.setattr(run, "read_stdin", slow_stdin)
    assert run.run(["post-tool-use"]) == ""
    lines = (tmp_path / "home" / "spool" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 1 and "make lint" in lines[0]


def test_a_command_names_the_project_files_it_reads_or_runs(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("# r\n")
    root = str(tmp_path)
    assert events.command_files("cat src/calc.py", root, root) == ["src/calc.py"]
    assert events.command_files(
        "sed -n '1,20p' 'src/calc.py' && head -5 README.md ./src/calc.py", root, root
    ) == ["src/calc.py", "README.md"]
    assert events.command_files(f"python3 {root}/src/calc.py --out=x.py", root, root) == [
        "src/calc.py"
    ]
    # Not files: flags, globs, missing paths, words without a dot or slash.
    assert events.command_files("ls -la src/*.py missing.py make test", root, root) == []
    obs = events.observation(
        {
            "tool_name": "Bash",
            "tool_input": {"command": "cat src/calc.py"},
            "tool_response": {"stdout": "x = 1"},
        },
        root,
        str(tmp_path / "src"),  # relative to the command's cwd, recorded from the root
    )
    assert obs is not None and obs["files"] == []
    obs = events.observation(
        {"tool_name": "Bash", "tool_input": {"command": "cat calc.py"}, "tool_response": {}},
        root,
        str(tmp_path / "src"),
    )
    assert obs is not None and obs["files"] == ["src/calc.py"]


def test_a_turns_closing_message_is_an_answer_titled_by_its_first_sentence() -> None:
    message = (
        "The dev server now proxies /api to http://localhost:8081. No path rewrite: the "
        "backend's routes already start with /api.\n\nVITE_API_BASE still overrides it."
    )
    obs = events.answer(message, 4000)
    assert obs is not None and obs["type"] == "answer"
    assert obs["title"] == "The dev server now proxies /api to http://localhost:8081."
    assert str(obs["body"]).startswith("No path rewrite") and "VITE_API_BASE" in str(obs["body"])


def test_an_answer_without_an_early_sentence_end_keeps_all_of_it_in_the_body() -> None:
    message = "Renamed " + ", ".join(f"field_{i}" for i in range(60)) + " everywhere"
    obs = events.answer(message, 4000)
    assert obs is not None and str(obs["title"]).endswith("…")
    assert len(str(obs["title"])) <= events.TITLE_CHARS and obs["body"] == message


def test_a_closing_message_that_says_too_little_is_no_answer() -> None:
    assert events.answer("Done.", 4000) is None
    assert events.answer("   ", 4000) is None
    assert events.answer("<private>the client is acme corp, fixed</private> ok", 4000) is None


def test_an_answer_keeps_no_secret_and_no_private_block() -> None:
    message = (
        "Deployed with the new key. <private>Customer: Initech.</private> The key is "
        "ANTHROPIC_API_KEY=sk-ant-api03-abcDEF123456ghiJKL789mnoPQR_stuVWX-yz0123456789AA now."
    )
    obs = events.answer(message, 4000)
    assert obs is not None
    text = f"{obs['title']} {obs['body']}"
    assert "Initech" not in text and "abcDEF123456" not in text


def test_an_answer_is_named_by_its_prompt_like_the_prompt() -> None:
    payload = {"session_id": "s1", "prompt_id": "p-42", "hook_event_name": "Stop"}
    assert events.event_id("answer", payload, "title") == "cc:s1:answer:p-42"
    without = {"session_id": "s1", "hook_event_name": "Stop"}
    assert events.event_id("answer", without, "a") != events.event_id("answer", without, "b")
