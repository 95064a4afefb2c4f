"""Code names at a prompt, and the keyword-only mode's order of what it keeps.

Coding prompts name things: a file (`billing/views.py`), a symbol (`useWishlist`,
`std::sync::LazyLock`, `.unwrap()`), a setting (`TRAILMATE_KEYSTORE`). An item that holds the same
name is about the same thing even when the rest of its text is far from the prompt's words: the
relevance model's `name` feature (retrieval/relevance.py), and with words alone (no query vector)
evidence on its own. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from worker.retrieval.ranking import Candidate

# Characters around a name in prose: quotes, brackets, sentence punctuation.
_EDGE = "`'\"()[]{}<>,;:?!*"
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_LETTERS = re.compile(r"[^\W\d_].*[^\W\d_]", re.DOTALL)
# Shorter than this, a "name" is mostly noise (`a.b`, `i/o`).
MIN_NAME_CHARS = 4
# A file name is matched inside a memory's text: shorter ones (`a.py`, `db.go`) occur inside
# other names too often.
MIN_FILE_NAME_CHARS = 6


def _strip(token: str) -> str:
    token = token.strip(_EDGE)
    while token.endswith((".", "()")):
        token = token[:-2] if token.endswith("()") else token[:-1]
        token = token.strip(_EDGE)
    return token.lstrip(".")


def _code_like(token: str) -> bool:
    """A file path, dotted or `::` name, snake_case, camelCase, or a `--flag`."""
    if token.startswith("--") and len(token) > 3:
        return True
    if "::" in token or "_" in token.strip("_"):
        return True
    if re.search(r"\w[./]\w", token):
        return True
    return bool(_CAMEL.search(token))


def code_names(prompt: str) -> list[str]:
    """The code names a prompt mentions (files, symbols, settings), lower-cased, in order."""
    names: list[str] = []
    for raw in prompt.split():
        called = raw.rstrip(_EDGE.replace("(", "").replace(")", "") + ".").endswith("()")
        token = _strip(raw)
        if len(token) < MIN_NAME_CHARS or not _LETTERS.search(token):
            continue
        if not (called or _code_like(token)):
            continue
        name = token.lower()
        if name not in names:
            names.append(name)
    return names


def item_text(item: Mapping[str, Any]) -> str:
    """An item's searchable text (title, body, files), lower-cased, for name matching."""
    files = item.get("files") or []
    parts = [str(item.get("title") or ""), str(item.get("body") or ""), *map(str, files)]
    return "\n".join(parts).lower()


def shares_name(names: Iterable[str], item: Mapping[str, Any]) -> bool:
    """Whether the item holds one of the prompt's code names."""
    names = list(names)
    if not names:
        return False
    text = item_text(item)
    return any(name in text for name in names)


def title_only(item: Mapping[str, Any], names: Iterable[str]) -> bool:
    """An observation that holds nothing but its title (a file read: the hooks keep no content)
    and no code name of the prompt. It records only that a file was looked at, which tells a
    reader something at a prompt only when the prompt names that file; otherwise it is a line
    about the prompt's subject that says nothing of it."""
    if item.get("kind") != "observation" or str(item.get("body") or "").strip():
        return False
    return not shares_name(names, item)


def within_floor(kept: list[Candidate], ratio: float) -> list[Candidate]:
    """The kept items (best first) whose score is at least `ratio` of the best one's *of their
    group*: explicit memories against memories, raw activity (observations, summaries, earlier
    prompts) against activity. Ranking scores of the two groups are not comparable (a burst of
    observations about the prompt's words outscores the one rule that governs them), so a floor
    across groups dropped the memories that matter most behind a strong observation."""
    best: dict[bool, float] = {}
    for cand in kept:
        group = cand.ref[0] == "memory"
        best[group] = max(best.get(group, cand.score), cand.score)
    return [c for c in kept if c.score >= ratio * best[c.ref[0] == "memory"]]


def best_memory_first(kept: list[Candidate]) -> list[Candidate]:
    """The kept items (best first) with the best explicit memory moved to the front. A memory
    is a rule or fact someone chose to keep; at a prompt with a burst of activity about the
    same words, the activity's higher scores filled the budget and the item count before the
    memory that governs it got a line. Only the best one moves: putting every memory first
    pushed a file's own history out of a prompt that asks what changed in it."""
    memories = [c for c in kept if c.ref[0] == "memory"]
    if not memories:
        return kept
    return [memories[0], *(c for c in kept if c is not memories[0])]
