"""Supersession without an LLM: same subject, different values -> the newer memory updates the older.

A memory is split into subject words and value words. Values are what a decision or fact pins down:
numbers, versions, dates, names of things (capitalised or camelCase words, identifiers). Two memories
speak of the same subject when their words overlap strongly once the values that differ are set
aside, and their word order agrees; they conflict when each holds a value the other lacks, or one
negates what the other states. "use PostgreSQL 15 for the database" and "move to PostgreSQL 16 for the
database" share {postgresql, database}, differ in {15} / {16}: the newer one supersedes.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from worker.memory.tags import STOP_WORDS, WORD, word_set

RELATION_KINDS = ("updates", "extends", "derives")
MAX_WORDS = 300

NEGATIONS = word_set(
    "never don't dont doesn't isn't aren't wasn't won't can't cannot shouldn't mustn't "
    "without neither stop stopped disable disabled drop dropped avoid"
)
# "not" negates a statement after an auxiliary ("do not deploy"); after a comma it only contrasts
# ("use pnpm, not npm"). "no" negates in "no longer" / "no more".
AUXILIARIES = word_set("do does did is are was were be must should can could will would may")
# Words that announce a change rather than name its subject.
CHANGE_WORDS = word_set(
    "use uses using used now instead switch switched switching move moved moving migrate migrated "
    "migrating upgrade upgraded downgrade downgraded change changed replace replaced from to new "
    "old prefer preferred going forward anymore longer latest current currently going decided "
    "decide decision let's lets we our will shall should start started"
)
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Features:
    words: tuple[str, ...]  # every word in order (for the word-order check)
    terms: frozenset[str]  # subject and value words (no stop/change/negation words)
    values: frozenset[str]  # the terms that are values
    negated: bool


def features(text: str) -> Features:
    sequence: list[str] = []
    terms: set[str] = set()
    values: set[str] = set()
    negated = False
    sentence_start = True
    previous = ""
    for match in WORD.finditer(text):
        if len(sequence) >= MAX_WORDS:
            break
        token = match.group(0)
        word = token.lower().rstrip(".-")
        sequence.append(word)
        after = text[match.end() : match.end() + 1]
        starts = sentence_start
        sentence_start = after in (".", "!", "?", ":", "\n")
        before, previous = previous, word
        if (
            word in NEGATIONS
            or word.endswith("n't")
            or (word == "not" and before in AUXILIARIES)
            or (word in ("longer", "more") and before == "no")
        ):
            negated = True
            continue
        if word in STOP_WORDS or word in CHANGE_WORDS or (len(word) < 2 and not word.isdigit()):
            continue
        terms.add(word)
        is_name = (token[:1].isupper() and not starts) or token[1:] != token[1:].lower()
        if _DIGIT.search(word) or is_name or "_" in word:
            values.add(word)
    return Features(tuple(sequence), frozenset(terms), frozenset(values), negated)


def supersedes(new: Features, old: Features, min_similarity: float = 0.5) -> float | None:
    """Subject similarity in 0..1 if `new` replaces a value of `old` (else None)."""
    added = new.values - old.terms
    removed = old.values - new.terms
    changed = bool(added and removed)
    flipped = new.negated != old.negated
    if not (changed or flipped):
        return None
    shared = new.terms & old.terms
    if not shared or (flipped and not changed and len(shared) < 2):
        return None
    if (new.terms - new.values - old.terms) and (old.terms - old.values - new.terms):
        return None  # each names something the other does not: another subject, not a new value
    union = (new.terms | old.terms) - added - removed
    subject = len(shared) / len(union) if union else 0.0
    if subject < max(0.6, min_similarity):
        return None
    matcher = difflib.SequenceMatcher(None, new.words, old.words, autojunk=False)
    if matcher.real_quick_ratio() < min_similarity or matcher.quick_ratio() < min_similarity:
        return None  # cheap upper bounds first: most candidates stop here
    order = matcher.ratio()
    if order < min_similarity:
        return None
    return round(subject * 0.5 + order * 0.5, 4)


def values_differ(new: Features, old: Features) -> bool:
    """Each holds a value the other lacks, or one negates what the other states."""
    return bool(new.values - old.terms and old.values - new.terms) or new.negated != old.negated


def search_terms(found: Features, limit: int = 12) -> list[str]:
    """Words to find candidate memories by: the values first, then the longest subject words."""
    subject = sorted(found.terms - found.values, key=lambda w: (-len(w), w))
    return [*sorted(found.values), *subject][:limit]


def chain(
    start: int, superseded_by: dict[int, int | None], supersedes: dict[int, int]
) -> list[int]:
    """The update chain through `start`, oldest first (cycle-safe).

    `superseded_by` maps a memory to its newer version; `supersedes` maps it to its older one.
    """
    older: list[int] = []
    seen = {start}
    node = start
    while node in supersedes and supersedes[node] not in seen:
        node = supersedes[node]
        seen.add(node)
        older.append(node)
    newer: list[int] = []
    node = start
    while (nxt := superseded_by.get(node)) is not None and nxt not in seen:
        seen.add(nxt)
        newer.append(nxt)
        node = nxt
    return [*reversed(older), start, *newer]
