"""Importance 1..5 scored from the text alone (no LLM): deterministic and explainable."""

from __future__ import annotations

import re

from worker.memory.tags import WORD

# Words of constraint or priority, with their weight.
CONSTRAINTS: dict[str, float] = {
    "never": 1.0,
    "always": 1.0,
    "must": 1.0,
    "critical": 1.0,
    "do not": 1.0,
    "don't": 1.0,
    "must not": 1.0,
    "avoid": 0.75,
    "required": 0.75,
    "mandatory": 0.75,
    "important": 0.75,
    "forbidden": 1.0,
    "security": 0.5,
    "only": 0.25,
    "should": 0.5,
    "make sure": 0.75,
    "ensure": 0.5,
    "careful": 0.5,
    "breaking": 0.75,
    "warning": 0.5,
    "instead of": 0.5,
}
_CONSTRAINT = re.compile(
    r"\b(" + "|".join(re.escape(k) for k in sorted(CONSTRAINTS, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_VERSION = re.compile(r"\b(?:v?\d+\.\d+(?:\.\d+)*|v\d+)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\s*(?:%|ms|s|kb|mb|gb|tb|k|m)?\b", re.IGNORECASE)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|"
    rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}\b|\b\d{{1,2}}\s+(?:{_MONTHS})\b",
    re.IGNORECASE,
)
_DEADLINE = re.compile(
    r"\b(deadline|due|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|"
    r"tonight|eod|end of (?:day|week|month|sprint|quarter))|before (?:the )?release|no later than|"
    r"asap|urgent(?:ly)?|until)\b",
    re.IGNORECASE,
)
_CODE_NAME = re.compile(
    r"`[^`]+`|\b\w+\.(?:py|js|ts|tsx|go|rs|java|rb|toml|json|ya?ml|md|sql|sh)\b"
)

KIND_WEIGHT = {"decision": 1.0, "preference": 1.0, "lesson": 0.5, "fact": 0.0, "note": -0.5}


def _names(text: str) -> int:
    """Names of things: capitalised words not opening a sentence, camelCase, snake_case, paths."""
    count = 0
    sentence_start = True
    for match in WORD.finditer(text):
        token = match.group(0)
        inner_caps = token[1:] != token[1:].lower()
        if (
            (token[:1].isupper() and not sentence_start)
            or inner_caps
            or "_" in token
            or ("/" in text[max(0, match.start() - 1) : match.start()])
        ):
            count += 1
        tail = text[match.end() : match.end() + 2]
        sentence_start = tail[:1] in (".", "!", "?", ":") or tail.startswith(("\n",))
    return count + len(_CODE_NAME.findall(text))


def signals(content: str, kind: str) -> dict[str, float]:
    """Each signal's contribution to the score (shown by the API to explain an importance)."""
    n_words = len(WORD.findall(content))
    if n_words < 5:
        length = 0.0
    elif n_words < 12:
        length = 0.25
    elif n_words < 25:
        length = 0.5
    elif n_words < 50:
        length = 0.75
    else:
        length = 1.0
    found = [m.lower() for m in _CONSTRAINT.findall(content)]
    weights = sorted((CONSTRAINTS[w] for w in set(found)), reverse=True)
    constraint = sum(weights[:1]) + 0.5 * sum(weights[1:3])
    versions = len(_VERSION.findall(content))
    dates = len(_DATE.findall(content))
    numbers = len(_NUMBER.findall(content))
    values = min(1.0, 0.5 * min(versions, 1) + 0.5 * min(dates, 1) + 0.25 * min(numbers, 2))
    deadline = 1.0 if _DEADLINE.search(content) else 0.0
    names = min(1.0, 0.25 * _names(content))
    return {
        "base": 1.0,
        "length": length,
        "constraint": min(constraint, 1.75),
        "values": values,
        "deadline": deadline,
        "names": names,
        "kind": KIND_WEIGHT.get(kind, 0.0),
    }


def score(content: str, kind: str = "note") -> int:
    """Importance 1..5 from the text and kind. The same input always gives the same score."""
    total = sum(signals(content, kind).values())
    return max(1, min(5, int(total + 0.5)))
