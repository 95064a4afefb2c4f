"""How many examples a property test runs: its full count, scaled by the hypothesis profile.

`make test` runs the full counts; `make test-fast` loads the `fast` profile (see conftest.py),
which runs a fifth of them (at least 10) so the unit tier stays under a minute.
"""

from __future__ import annotations

from hypothesis import settings

FULL = 100  # hypothesis' own default max_examples: the `full` profile's


def examples(full: int) -> int:
    return max(10, full * settings.default.max_examples // FULL)
