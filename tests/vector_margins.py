"""How far a test's cosine must sit from a threshold to give the same answer on every CPU.

The default model multiplies in int8 (worker/retrieval/quantize.py), and int8 kernels differ by
CPU: AVX2 saturates intermediate sums where AVX-512 VNNI does not. A similarity between two texts
therefore moves with the machine: "Our database is PostgreSQL 15" / "We upgraded the DB to
Postgres 16" is 0.7158 with int8 on AVX2, 0.7051 in float32 and 0.6911 with int8 on AVX-512 VNNI
(issue 17), around a supersession threshold of 0.70. Measured here (AVX2, 2 cores): between the
int8 and the float32 model, pairwise cosines of the real-model tests' texts move by at most 0.030
where they sit within 0.1 of the 0.46 and 0.70 thresholds (0.045 over all their pairs, up to 0.09
in 20k LoCoMo pairs, p99 0.043); the issue cites 0.014 between float32 and VNNI int8, and the
pair above spans 0.025 between two CPUs' int8 kernels.

So a test that relies on the real model keeps each deciding cosine MARGIN = 3 x SPREAD away from
its threshold, and asserts that margin on the value it saw (assert_clear_of); test_retrieval_
margins.py checks the same decisions with both kernels this machine has. A change that erodes a
margin fails with the figures, not by a flip on someone else's CPU.
"""

from __future__ import annotations

from typing import Any

SPREAD = 0.03
MARGIN = 3 * SPREAD


def assert_clear_of(value: float, threshold: float, above: bool, what: str) -> None:
    """`value` lies on the expected side of `threshold`, at least MARGIN away from it."""
    gap = value - threshold if above else threshold - value
    side = "above" if above else "below"
    assert gap >= MARGIN, (
        f"{what}: cosine {value:.4f} is {gap:+.4f} {side} the threshold {threshold}; it needs "
        f"{MARGIN:.2f} (3 x the {SPREAD} that int8 kernels move a cosine across CPUs)"
    )


def assert_ahead(first: float, second: float, what: str) -> None:
    """An order that must hold on every CPU: the first cosine leads by at least MARGIN."""
    assert first - second >= MARGIN, (
        f"{what}: {first:.4f} leads {second:.4f} by {first - second:.4f}; it needs {MARGIN:.2f}"
    )


# ---- the real-model tests' inputs (tests/e2e), shared with test_retrieval_margins.py ----

# tests/e2e/test_lifecycle.py: supersession by vector (settings.memories.supersede_cosine). The update
# shares no word with the old fact (DB / database, Postgres / PostgreSQL), so only its vector
# can find it; memories are saved in this order, in one project, no session.
OLD_FACT = "Our database is PostgreSQL 15"
OTHER_FACT = "The staging server runs on port 8080"
PARAPHRASED_UPDATE = "Our DB is now Postgres 16"
UNRELATED_FACT = "The production server runs on port 443"

# tests/e2e/test_retrieval_e2e.py: one session's work, then a prompt in other words.
REFUND_SESSION: list[dict[str, Any]] = [
    {
        "type": "file_write",
        "title": "Edit src/checkout/refunds.py",
        "body": "Partial refunds now round to the cent before calling the Stripe API; "
        "fixes the 'amount must be an integer' error on refunds of discounted orders",
        "files": ["src/checkout/refunds.py"],
    },
    {
        "type": "command",
        "title": "pytest tests/checkout/test_refunds.py",
        "body": "14 passed in 1.9s",
    },
    {
        "type": "research",
        "title": "Read docs/payments/stripe.md",
        "body": "Stripe amounts are integers in the smallest currency unit",
    },
    {
        "type": "file_write",
        "title": "Edit frontend/styles/header.css",
        "body": "Header logo aligned to the left on mobile",
        "files": ["frontend/styles/header.css"],
    },
]
REFUND_PROMPT = (
    "customers get an error from the payment API when we give back part of the money "
    "for a discounted order"
)
UNRELATED_PROMPTS = (
    "what is a good recipe for banana bread?",
    "write a limerick about penguins on holiday",
)

# tests/e2e/test_retrieval_cli.py
CLI_NOTES = [f"note {i} about the build cache" for i in range(30)]
CLI_RELEASE = {"title": "make release", "body": "tagged v1.2"}
CLI_UNRELATED_QUERY = "banana bread recipe"
