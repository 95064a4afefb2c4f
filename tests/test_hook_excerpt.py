"""hooks/cairn_hook_excerpt.py: what a capped field keeps of a long command output or edit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hook_modules import events, excerpt

ROOT = "/home/dev/proj"


def progress(n: int, start: int = 0) -> list[str]:
    return [f"[{i}/400] Compiling module_{i}.c" for i in range(start, start + n)]


def test_an_output_within_the_cap_is_kept_whole() -> None:
    text = "collected 3 items\n3 passed in 0.2s"
    assert excerpt.output(text, 500) == text


def test_the_failure_in_the_middle_of_a_long_log_is_kept_with_its_ends() -> None:
    failure = "E   sqlite3.IntegrityError: UNIQUE constraint failed: invoice.number"
    log = "\n".join([*progress(60), failure, *progress(60, 60), "1 failed, 40 passed in 3.1s"])
    kept = excerpt.output(log, 500)
    # What a plain head and tail would keep loses it: the case is one the excerpt must fix.
    assert failure not in excerpt.head_tail(log, 500)
    assert " ".join(failure.split()) in kept  # its whitespace runs folded
    assert kept.startswith("[0/400] Compiling module_0.c")
    assert kept.endswith("1 failed, 40 passed in 3.1s")
    assert len(kept) <= 3 * 500 + 10


def test_an_output_without_a_failure_line_is_cut_at_both_ends_as_before() -> None:
    log = "\n".join(progress(200))
    assert excerpt.output(log, 500) == excerpt.head_tail(log, 500)


def test_a_failure_line_brings_the_line_that_explains_it_but_not_a_bare_prefix() -> None:
    lines = [
        *progress(40),
        "api-1  | ERROR [ExceptionHandler] Prisma Client could not locate the Query Engine",
        "api-1  |",
        "api-1  | This happened because Prisma Client was generated for debian-openssl-3.0.x",
        "api-1  | Add linux-musl-openssl-3.0.x to binaryTargets",
        *progress(40, 40),
    ]
    kept = excerpt.output("\n".join(lines), 500)
    assert "could not locate the Query Engine" in kept
    assert "This happened because Prisma Client was generated for debian" in kept
    assert "binaryTargets" not in kept  # one line after a failure, not every line


def test_lines_that_differ_only_in_numbers_are_said_once() -> None:
    retry = (
        'error when evicting pods/"web-api-6d9c7b8f4-q2xl{}" (will retry after {}s): Cannot evict'
    )
    lines = [*progress(40), *(retry.format(i, 5 * i) for i in range(30)), *progress(40, 40)]
    kept = excerpt.output("\n".join(lines), 500)
    assert kept.count("Cannot evict") == 1


def test_a_prefix_every_middle_line_repeats_is_dropped_from_the_kept_lines() -> None:
    prefix = "plan (prod)\tRun terraform init -input=false -lockfile=readonly\t"
    lines = [f"{prefix}{line}" for line in progress(40)]
    lines.insert(20, f"{prefix}Error: Failed to install provider hashicorp/aws v5.54.1")
    kept = excerpt.output("\n".join(lines), 500)
    (line,) = [line for line in kept.splitlines() if "Failed to install" in line]
    assert line == "Error: Failed to install provider hashicorp/aws v5.54.1"


def test_the_failure_lines_have_a_budget_and_a_line_is_cut_to_half_the_cap() -> None:
    noisy = [f"Error: check {i} failed on input {chr(65 + i % 26) * 12}" for i in range(300)]
    long_line = "Exception: " + "detail " * 200
    lines = [*progress(40), long_line, *noisy, *progress(40, 40)]
    kept = excerpt.output("\n".join(lines), 500)
    assert len(kept) <= 3 * 500 + 10
    assert max(len(line) for line in kept.splitlines()) <= 250


def test_secrets_and_private_blocks_in_the_middle_stay_out() -> None:
    lines = [
        *progress(40),
        "Error: auth failed for aws_access_key_id = AKIAIOSFODNN7EXAMPLQ",
        "<private>",
        "Error: customer acme-secret-name failed",
        "</private>",
        *progress(40, 40),
    ]
    kept = excerpt.output("\n".join(lines), 500)
    assert "auth failed" in kept
    assert "AKIAIOSFODNN7EXAMPLQ" not in kept and "acme-secret-name" not in kept


def test_a_huge_output_keeps_its_start_and_the_failure_near_its_end() -> None:
    lines = [*progress(400), *(["x" * 80] * 5000), "FATAL: disk quota exceeded", "bye"]
    kept = excerpt.output("\n".join(lines), 500)
    assert kept.startswith("[0/400]") and "FATAL: disk quota exceeded" in kept


def test_an_edit_that_fits_is_kept_as_sent() -> None:
    assert excerpt.edit("a = 1", "a = 2", 500) == ("a = 1", "a = 2")


def test_a_long_edit_keeps_what_it_changed_not_the_lines_around_it() -> None:
    context = [f"    line_{i} = compute({i})" for i in range(30)]
    old = "\n".join([*context, "    return total"])
    new = "\n".join([*context, "    return total, limit=300"])
    kept_old, kept_new = excerpt.edit(old, new, 200)
    assert "return total, limit=300" not in excerpt.head(new, 200)
    assert "return total, limit=300" in kept_new and "return total" in kept_old
    assert "line_5" not in kept_new and "…" in kept_new


def test_a_long_new_text_gets_the_room_a_short_old_one_leaves() -> None:
    new = "\n".join(f"    step_{i}()  # does thing number {i}" for i in range(30))
    kept_old, kept_new = excerpt.edit("pass", new, 500)
    assert kept_old == "pass"
    assert len(kept_new) > 500 and "step_25()" in kept_new


def test_a_failed_commands_observation_keeps_its_error_line() -> None:
    error = "\n".join(
        [
            "Exit code 1",
            *progress(30),
            "E   : org.apache.spark.SparkException: Cannot find catalog plugin class",
            *progress(30, 30),
            "FAILED tests/test_silver.py::test_transform - Py4JJavaError",
        ]
    )
    obs = events.observation(
        {
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q", "description": "Run the tests"},
            "error": error,
            "hook_event_name": "PostToolUseFailure",
        },
        ROOT,
        ROOT,
    )
    assert obs is not None and "Cannot find catalog plugin class" in str(obs["body"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(max_size=300), max_size=60),
    st.integers(min_value=1, max_value=800),
)
def test_output_never_raises_and_stays_within_three_caps(lines: list[str], limit: int) -> None:
    kept = excerpt.output("\n".join(lines), limit)
    assert len(kept) <= 3 * limit + 2 * len(" …") + 400  # + the head's redaction margin


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000), st.text(max_size=2000), st.integers(min_value=1, max_value=600))
def test_edit_never_raises(old: str, new: str, limit: int) -> None:
    kept_old, kept_new = excerpt.edit(old, new, limit)
    assert len(kept_old) <= limit + 2 and len(kept_new) <= 2 * limit + 2


def test_an_edit_too_long_to_diff_is_cut_as_it_is() -> None:
    old = "\n".join(f"line {i} = value({i})" for i in range(excerpt.DIFF_LINES + 10))
    new = old + "\nappended()"
    kept_old, kept_new = excerpt.edit(old, new, 300)
    assert kept_old.startswith("line 0 = value(0)") and kept_new.startswith("line 0 = value(0)")
    assert len(kept_old) <= 302 and len(kept_new) <= 2 * 300 + 2
