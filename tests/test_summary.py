"""Pure summary/checkpoint builders: deterministic, capped, reading commands and messages right."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from worker.memory.activity import command_text, exit_code, is_looking_command, message_parts
from worker.memory.checkpoint import build_checkpoint
from worker.memory.summary import SummaryLimits, build_summary

ROOT = "/repo"


def edit(path: str, tool: str = "Edit") -> dict[str, Any]:
    return {"type": "file_write", "title": f"{tool} {path}", "tool_name": tool, "files": [path]}


def cmd(command: str, code: int | None) -> dict[str, Any]:
    meta = {"exit_code": code} if code is not None else None
    return {"type": "command", "title": f"$ {command}", "body": "", "meta": meta}


def test_exit_code_from_meta_body_or_title() -> None:
    assert exit_code({"meta": {"exit_code": 3}}) == 3
    assert exit_code({"meta": {"exitCode": "0"}}) == 0
    assert exit_code({"body": "stdout...\nexit code: 127"}) == 127
    assert exit_code({"title": "make build (exit 2)"}) == 2
    assert exit_code({"title": "pytest", "body": "all good"}) is None


def test_command_text_sources() -> None:
    assert command_text({"meta": {"command": "  make   test "}}) == "make test"
    assert command_text({"body": "$ cargo build --release\nok"}) == "cargo build --release"
    assert command_text({"title": "Ran npm test (exit 1)"}) == "npm test"
    assert command_text({"title": "Bash: uv run pytest"}) == "uv run pytest"
    # the hook's shape: title from the description, the command on a body line
    hook_shaped = {
        "title": "Run: Run the tests (exit 1)",
        "body": "command: pytest -q\nexit code: 1",
    }
    assert command_text(hook_shaped) == "pytest -q" and exit_code(hook_shaped) == 1
    assert command_text({"title": "Run: make lint (exit 2)"}) == "make lint"


def test_looking_commands_are_not_work() -> None:
    for looking in ("ls -la", "git status", "cat x | head", "FOO=1 grep -r a ."):
        assert is_looking_command(looking), looking
    for work in ("git commit -m x", "pytest -q", "make", "sudo apt-get install x"):
        assert not is_looking_command(work), work


def test_message_parts_sections_and_cues() -> None:
    message = """## Summary
- Added retry logic to the fetcher

The root cause was a missing timeout on the HTTP client. Everything else looks fine.

**Next steps:**
1. Add a test for the retry path
2. Bump the version

Do you want me to open a PR?
```
# Next steps: inside code is ignored
```"""
    parts = message_parts(message)
    assert parts["done"] == ["Added retry logic to the fetcher"]
    assert parts["learned"] == ["The root cause was a missing timeout on the HTTP client."]
    assert parts["next"] == ["Add a test for the retry path", "Bump the version"]
    assert parts["questions"] == ["Do you want me to open a PR?"]


REALISTIC_MESSAGE = """I've implemented the rate limiter and all tests pass.

## What changed
- Added `RateLimiter` class in `api/limits.py` using a token bucket
- Wired it into the middleware stack in `app.py`

The 429s you saw were caused by the proxy counting health checks against the same bucket. \
Redis is only used when `RATE_LIMIT_BACKEND=redis`; otherwise an in-memory dict is used, which \
means limits are per-process.

**Note:** the limiter does not support per-user quotas yet.

Would you like me to add per-user quotas next? You may also want to tune the burst size."""


def test_a_realistic_final_message() -> None:
    parts = message_parts(REALISTIC_MESSAGE)
    assert parts["learned"] == [
        "The 429s you saw were caused by the proxy counting health checks against the same bucket.",
        "Redis is only used when `RATE_LIMIT_BACKEND=redis`; otherwise an in-memory dict is used, "
        "which means limits are per-process.",
        "The limiter does not support per-user quotas yet.",
    ]
    assert parts["done"] == [
        "Added `RateLimiter` class in `api/limits.py` using a token bucket",
        "Wired it into the middleware stack in `app.py`",
    ]
    assert parts["questions"] == ["Would you like me to add per-user quotas next?"]
    assert parts["next"] == ["You may also want to tune the burst size."]


def test_loose_learned_sentences_must_be_statements() -> None:
    message = (
        "I found three problems with the parser: "
        "Let me explain why the cache requires a warm-up. "
        "It uses X. "
        "The parser requires UTF-8 input because the lexer indexes bytes."
    )
    assert message_parts(message)["learned"] == [
        "The parser requires UTF-8 input because the lexer indexes bytes."
    ]


def test_summary_caps_and_keeps_tests_visible() -> None:
    observations = [edit(f"{ROOT}/src/m{i}.py") for i in range(40)] + [cmd("pytest -q", 0)]
    draft = build_summary(
        [{"text": "refactor the modules"}],
        observations,
        root=ROOT,
        limits=SummaryLimits(completed=10, files=20),
    )
    assert len(draft.completed) == 10
    assert "Ran `pytest -q` (succeeded)" in draft.completed
    assert draft.completed[-1] == "… and 32 more files edited"  # 8 of the 40 shown
    assert len(draft.files) == 20 and draft.files[0] == "src/m0.py"


def test_summary_learned_facts_exclude_exploration() -> None:
    observations = [
        {"type": "research", "title": "Read a", "files": [f"{ROOT}/a.py"]},
        {"type": "web", "title": "WebSearch: sqlite wal", "body": "WAL allows readers"},
    ]
    draft = build_summary([{"text": "look into WAL"}], observations, root=ROOT)
    # What was looked at is done, not learned (it read as knowledge in summaries and reports).
    assert draft.learned == [] and draft.facts == []
    assert draft.completed == ["Explored a.py", "Looked up: WebSearch: sqlite wal"]
    concluded = build_summary(
        [], observations, last_assistant_message="It turns out WAL lets readers run during writes."
    )
    assert concluded.facts == ["It turns out WAL lets readers run during writes."]
    assert concluded.learned[0] == concluded.facts[0]


def test_without_tool_work_the_message_says_what_was_done() -> None:
    message = "## Summary\n- Reviewed the retry policy\n- Explained the backoff cap"
    draft = build_summary([{"text": "review the retry policy"}], [], last_assistant_message=message)
    assert draft.completed == ["Reviewed the retry policy", "Explained the backoff cap"]
    worked = build_summary([], [edit("/repo/a.py")], last_assistant_message=message, root=ROOT)
    assert worked.completed == ["Edited a.py"]


def test_trivial_prompts_do_not_make_the_request() -> None:
    draft = build_summary([{"text": "ok"}, {"text": "Port the CLI to click"}], [])
    assert draft.request == "Port the CLI to click"
    only_trivial = build_summary([{"text": "continue"}], [])
    assert only_trivial.request == "continue"


def test_checkpoint_short_follow_up_keeps_context() -> None:
    draft = build_checkpoint(
        [{"text": "Migrate the billing service to Postgres 16"}, {"text": "now the tests too"}],
        [],
    )
    assert draft.task == "Migrate the billing service to Postgres 16 — then: now the tests too"


obs_strategy = st.lists(
    st.one_of(
        st.builds(edit, st.sampled_from(["/repo/a.py", "/repo/b/c.ts", "x.md"])),
        st.builds(
            cmd,
            st.sampled_from(["make", "pytest", "ls", "npm test"]),
            st.one_of(st.none(), st.integers(0, 3)),
        ),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["note", "mcp", "delegation", "web", "research"])},
            optional={"title": st.text(max_size=40), "body": st.text(max_size=40)},
        ),
    ),
    max_size=60,
)


@given(obs_strategy, st.lists(st.text(max_size=80), max_size=6), st.text(max_size=300))
def test_builders_are_deterministic_and_bounded(
    observations: list[dict[str, Any]], prompts: list[str], message: str
) -> None:
    rows = [{"text": t} for t in prompts]
    limits = SummaryLimits(completed=10, files=20, learned=8, next_steps=8, item_chars=300)
    a = build_summary(rows, observations, last_assistant_message=message, root=ROOT, limits=limits)
    b = build_summary(rows, observations, last_assistant_message=message, root=ROOT, limits=limits)
    assert a == b
    assert len(a.completed) <= 10 and len(a.files) <= 20
    assert len(a.learned) <= 8 and len(a.next_steps) <= 8
    assert all(len(item) <= 300 and "\n" not in item for item in a.completed + a.next_steps)
    assert len(set(a.files)) == len(a.files)
    cp = build_checkpoint(rows, observations, last_assistant_message=message, root=ROOT)
    assert cp == build_checkpoint(rows, observations, last_assistant_message=message, root=ROOT)
    assert len(cp.files) <= 15 and len(set(cp.files)) == len(cp.files)


def test_a_failed_command_later_run_as_a_step_of_a_passing_one_is_not_left_to_fix() -> None:
    from worker.memory.activity import failing_commands

    history = [
        cmd("python3 check_calc.py", 1),
        edit("calc.py"),
        cmd("python3 check_calc.py && echo check passed", None),  # PostToolUse: it succeeded
        cmd("npm run lint", 2),
        cmd("npm test; npm run build", 0),
    ]
    assert failing_commands(history) == [("npm run lint", 2)]


COMPACT_SUMMARY = """<analysis>The user wants calc fixed.</analysis>
<summary>
1. Primary Request and Intent:
   Fix calc.add, which returned 5 for add(2, 2).

4. Errors and fixes:
   - check_calc.py failed with AssertionError: the root cause was an extra + 1 in calc.add.

7. Pending Tasks:
   - Add a regression test for add()

8. Current Work:
   Edited calc.py to remove the off-by-one.

9. Optional Next Step:
   Run check_calc.py again.
</summary>"""


def test_a_compact_summary_gives_the_checkpoint_its_next_steps() -> None:
    from worker.memory.activity import compact_summary_message

    message = compact_summary_message(COMPACT_SUMMARY)
    assert message is not None and "Primary Request" not in message
    draft = build_checkpoint(
        [{"text": "fix calc.add"}],
        [cmd("python3 check_calc.py", 1)],
        last_assistant_message=message,
    )
    assert "Add a regression test for add()" in draft.next_steps
    assert "Run check_calc.py again." in draft.next_steps
    assert compact_summary_message("   ") is None
    assert compact_summary_message("no sections at all") is None


def test_a_search_over_the_project_root_is_not_an_explored_file() -> None:
    grep = {"type": "research", "title": "Grep 'def get' in .", "files": ["."], "tool_name": "Grep"}
    read = {"type": "research", "title": "Read http.py", "files": ["http.py"], "tool_name": "Read"}
    draft = build_summary([{"text": "where is get defined?"}], [grep, read])
    assert "Explored http.py" in draft.completed
    assert not any(item.endswith(", .") for item in draft.completed)


def test_a_labelled_line_is_its_section_without_its_label() -> None:
    """`Learned: ...` was missed (only 'I learned that...' was), or kept its prefix."""
    message = (
        "Learned: Alpine images have no bash, so the entrypoint uses /bin/sh.\n"
        "**Next:** pin the base image digest in the Dockerfile.\n"
        "Note: this is not a section label, so it stays where it was."
    )
    parts = message_parts(message)
    assert parts["learned"] == ["Alpine images have no bash, so the entrypoint uses /bin/sh."]
    assert parts["next"] == ["pin the base image digest in the Dockerfile."]
    draft = build_summary([{"text": "fix the container"}], [], last_assistant_message=message)
    assert draft.facts == ["Alpine images have no bash, so the entrypoint uses /bin/sh."]
    assert not any(item.lower().startswith("learned") for item in draft.learned)
    assert "pin the base image digest in the Dockerfile." in draft.next_steps


def test_a_failure_the_session_then_edited_code_for_is_not_a_next_step() -> None:
    failed_then_edited = [cmd("pytest -q", 1), edit(f"{ROOT}/src/calc.py")]
    draft = build_summary([{"text": "fix add()"}], failed_then_edited, root=ROOT)
    assert not any("pytest" in step for step in draft.next_steps)
    still_failing = [edit(f"{ROOT}/src/calc.py"), cmd("pytest -q", 1)]
    draft = build_summary([{"text": "fix add()"}], still_failing, root=ROOT)
    assert draft.next_steps == ["Fix the failing `pytest -q` (exit 1)"]


def test_completed_is_in_the_order_things_happened() -> None:
    observations = [
        edit(f"{ROOT}/src/a.py"),
        cmd("pytest -q", 0),
        edit(f"{ROOT}/src/b.py"),
        cmd("make lint", 0),
    ]
    draft = build_summary([{"text": "do it"}], observations, root=ROOT)
    assert draft.completed == [
        "Edited src/a.py",
        "Ran `pytest -q` (succeeded)",
        "Edited src/b.py",
        "Ran `make lint` (succeeded)",
    ]
