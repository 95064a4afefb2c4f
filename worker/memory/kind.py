"""A memory's kind guessed from its text, for clients that send none (no LLM: a few clear cues)."""

from __future__ import annotations

import re

DEFAULT_KIND = "fact"

# Checked in this order: the first kind whose cue appears wins ("we decided to always ..." is a
# decision). Only unmistakable wording counts; anything else is a fact.
CUES: tuple[tuple[str, str], ...] = (
    (
        "decision",
        r"decided|decision|we(?:'ll| will)? (?:use|go with|chose|picked|settled on)|"
        r"(?:chose|picked|settled on|going with|switched to|agreed on|agreed to)",
    ),
    (
        "lesson",
        r"learned|lesson|turns out|turned out|the fix (?:is|was)|root cause|gotcha|next time",
    ),
    (
        "preference",
        r"prefers?|preferred|preference|always|never|i(?:'d| would) rather|i like|"
        r"i don't like|i dislike",
    ),
)
_PATTERNS = tuple((kind, re.compile(rf"\b(?:{cue})\b", re.IGNORECASE)) for kind, cue in CUES)


def infer_kind(content: str) -> str:
    """'decision', 'lesson' or 'preference' when the text says so plainly, else 'fact'."""
    for kind, pattern in _PATTERNS:
        if pattern.search(content):
            return kind
    return DEFAULT_KIND
