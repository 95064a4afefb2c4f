"""Injected lines earn their tokens: statements once, labels once, failures by their failure line."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.retrieval.context_builder import checkpoint_text, summary_text
from worker.retrieval.context_lines import Said, failure_excerpt, statement_key

PYTEST_FAILURE = """command: python -m pytest -q
exit code: 1
stdout: ============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0
rootdir: /home/dev/app
collected 12 items

tests/test_calc.py ..F.........
=================================== FAILURES ===================================
E       AssertionError: add(2, 2) returned 5
FAILED tests/test_calc.py::test_add - AssertionError: add(2, 2) returned 5
========================= 1 failed, 11 passed in 0.12s ========================="""


def test_a_failed_test_run_is_shown_by_its_failure_line_not_the_banner() -> None:
    excerpt = failure_excerpt(PYTEST_FAILURE)
    assert "FAILED tests/test_calc.py::test_add - AssertionError: add(2, 2) returned 5" in excerpt
    assert "test session starts" not in excerpt and "platform linux" not in excerpt
    assert failure_excerpt("command: ls\nexit code: 2\nstdout: a b c") == ""


DJANGO_MIGRATE = """command: python manage.py migrate billing
exit code: 1
error: Exit code 1
Running migrations:
  Applying billing.0014_invoice_number_unique...Traceback (most recent call last):
  File ".venv/lib/python3.12/site-packages/django/db/backends/utils.py", line 105, in _execute
DETAIL:  Key (organisation_id, number)=(42, INV-7) is duplicated.

The above exception was the direct cause of the following exception:
django.db.utils.IntegrityError: could not create unique index "uniq_number"
"""

PANDAS_OOM = """command: python -m etl.run --date 2023-11-24
exit code: 1
Traceback (most recent call last):
  File "etl/extract.py", line 22, in read_orders
numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.21 GiB for an array
"""

GO_RACE = """command: go test -race ./...
exit code: 1
==================
WARNING: DATA RACE
Write at 0x00c0001b4060 by goroutine 41:
  example.com/svc/internal/cache.(*Local).Set()
==================
--- FAIL: TestLocalCacheConcurrent (0.02s)
FAIL	example.com/svc/internal/cache	0.311s
"""


def test_a_python_traceback_is_shown_by_its_exception_not_its_glue() -> None:
    excerpt = failure_excerpt(DJANGO_MIGRATE)
    assert "is duplicated" in excerpt and "IntegrityError: could not create" in excerpt
    assert "The above exception" not in excerpt and "Traceback" not in excerpt
    assert "_ArrayMemoryError: Unable to allocate" in failure_excerpt(PANDAS_OOM)


def test_a_go_test_failure_is_shown_by_its_race_and_fail_lines() -> None:
    excerpt = failure_excerpt(GO_RACE)
    assert "DATA RACE" in excerpt and "--- FAIL: TestLocalCacheConcurrent" in excerpt
    # Lower-case words ending in "error" are not exception names.
    assert failure_excerpt("stdout: a mirror of the terror list") == ""


def test_labels_markup_and_case_do_not_make_a_statement_new() -> None:
    said = Said()
    assert said.new("**Current task:** check_calc.py fails, please fix calc.add")
    assert not said.new("Task: check_calc.py fails, please fix calc.add")
    assert not said.new("Last session asked: Check_calc.py fails, please fix `calc.add`.")
    assert said.new("Edited calc.py") and not said.new("Completed: Edited calc.py")
    assert not said.new("   ")


def test_checkpoint_and_last_session_say_each_thing_once() -> None:
    said = Said()
    said.note("**Files in flight:** calc.py")
    checkpoint = checkpoint_text(
        {
            "task": "check_calc.py fails, please fix calc.add",
            "progress": "Edited calc.py\nRan `python3 check_calc.py` (succeeded)",
            "next_steps": "Next step: add a regression test",
            "open_questions": "",
            "files": ["calc.py"],
        },
        said,
    )
    assert checkpoint.splitlines() == [
        "Task: check_calc.py fails, please fix calc.add",
        "Progress: Edited calc.py; Ran `python3 check_calc.py` (succeeded)",
        "Next: add a regression test",  # not "Next: Next step: ..."
    ]
    summary = summary_text(
        {
            "title": "check_calc.py fails, please fix calc.add",
            "body": "Completed: Edited calc.py\nRan `python3 check_calc.py` (succeeded)\n"
            "Learned: calc.add added 1 to every sum\nNext: Next step: add a regression test",
        },
        said,
    )
    assert summary == "Learned: calc.add added 1 to every sum"


@given(st.text(max_size=200))
def test_statement_keys_are_stable(text: str) -> None:
    key = statement_key(text)
    assert statement_key(key) == key or not key
    assert failure_excerpt(text) is not None
