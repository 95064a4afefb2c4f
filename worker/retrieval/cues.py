"""What a prompt's own wording says about whether the project's memory can help.

Memory answers questions about a shared past: what *we* did, what failed *last time*, why
something *was* chosen. A question that asks how a tool works in general ("what's the difference
between X and Y", "how does X work") is answered from general knowledge, whatever the project
has stored about X. Three classes of English function words mark the two, and the relevance
model (retrieval/relevance.py) weighs each as a feature of the prompt, as it weighs the prompt's
best cosine: its fit decides how much each counts, and leave-one-project-out decides whether it
stays. They are word classes, not topics: no project's vocabulary is in them.

A prompt in another language has none of them, and the model then judges it on the other
features alone. Pure functions.
"""

from __future__ import annotations

import re

# The speaker and the team as one party: the project's own work.
_TEAM = re.compile(r"\b(we|we'[a-z]+|our|ours|us|ourselves|let's)\b")
# Back-reference in time, and the past tense's auxiliaries (what happened, what was decided).
_PAST = re.compile(
    r"\b(last time|again|earlier|before|previous|previously|already|still|anymore|any more"
    r"|used to|remind|remember|recall|did|didn't|was|wasn't|were|weren't|had|hadn't)\b"
)
# The forms of a question about a tool or language in general.
_GENERIC = re.compile(
    r"(\bdifference between\b|\bdiffer from\b|\bcompared to\b|\bvs\.?\s|\bversus\b"
    r"|\bdifferent (from|than)\b"
    r"|\bhow (does|do|is|are|would|can)\b.*\b(work|works|differ|different|compare)\b"
    r"|\bin general\b|\bgenerally\b|\bunder the hood\b|\bbest practices?\b"
    r"|\bwhen (should|would|do|to) (i|you|one)?\b|\bwhat (is|are) (a|an|the)\b|\bexplain\b)"
)


def _text(prompt: str) -> str:
    return prompt.lower().replace("\u2019", "'")


def team(prompt: str) -> float:
    """1 when the prompt speaks of "we"/"our": the team's own project."""
    return 1.0 if _TEAM.search(_text(prompt)) else 0.0


def past(prompt: str) -> float:
    """1 when the prompt refers back in time ("last time", "again", "did", "was")."""
    return 1.0 if _PAST.search(_text(prompt)) else 0.0


def generic(prompt: str) -> float:
    """1 when the prompt has the form of a general question about a tool or language."""
    return 1.0 if _GENERIC.search(_text(prompt)) else 0.0
