"""Two texts' key sequences (worker/memory/statement.py) aligned: the places where the old says
one thing and the new another (slots), and how alike the two orders are (for the update score).
"""

from __future__ import annotations

import difflib

from worker.memory.statement import RELATION_STEMS, UNIT_STEMS


def slots(
    a: list[str],
    b: list[str],
    theirs: set[str],
    mine: set[str],
    valued: set[str],
    joined: frozenset[str] | set[str] = frozenset(),
    relations: frozenset[str] | set[str] = RELATION_STEMS,
) -> list[tuple[list[str], list[str]]]:
    """Aligned places where the old says one thing and the new another (words that only moved,
    and relation verbs, set aside)."""
    out: list[tuple[list[str], list[str]]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace":
            continue
        gone = [w for w in a[i1:i2] if w not in mine]
        came = [w for w in b[j1:j2] if w not in theirs]
        gone = [w for w in gone if w not in relations]
        came = [w for w in came if w not in relations]
        if not (gone and came):
            continue
        gone_values = [w for w in gone if w in valued]
        came_values = [w for w in came if w in valued]
        gone_words = [w for w in gone if w not in valued]
        came_words = [w for w in came if w not in valued]
        units = set(gone_words + came_words) <= UNIT_STEMS  # "7 days" -> "24 hours": one value
        if gone_values and came_values and gone_words and came_words and not units:
            # "8 on the build server" / "2 on developer laptops": the value and what it is for
            out += [(gone_values, came_values), (gone_words, came_words)]
        elif _names(gone_values, joined) >= 2 and _names(came_values, joined) >= 2:
            # "snake_case for Python" / "camelCase for TypeScript": two values, two slots
            out += [(gone_values[:1], came_values[:1]), (gone_values[1:], came_values[1:])]
        else:
            out.append((gone, came))
    if not out:
        gone = [w for w in a if w not in mine and w in valued]
        came = [w for w in b if w not in theirs and w in valued]
        if gone and came:
            out.append((gone, came))  # a value replaced, the words around it reordered
    return out


def _names(values: list[str], joined: frozenset[str] | set[str]) -> int:
    """How many names the values make ("Docker Hub" is one, "snake_case ... Python" two)."""
    return sum(1 for i, w in enumerate(values) if i == 0 or w not in joined)


def score(a: list[str], b: list[str], subject: float) -> float:
    order = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    return round(subject * 0.5 + order * 0.5, 4)
