"""Words, stop words and tags: up to N keywords picked from a memory's text without an LLM."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Identifiers (snake_case, dotted.names, kebab-case, versions) stay whole: they are what people search.
WORD = re.compile(r"[^\W_][\w.+#-]*[\w+#]|[^\W_]", re.UNICODE)


def word_set(text: str) -> frozenset[str]:
    """A set of words written as one whitespace-separated string (easier to read and edit)."""
    return frozenset(text.split())


STOP_WORDS = word_set(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can cannot could couldn't did didn't do does doesn't
    doing don't done down during each either else etc even ever every few for from further get
    gets getting got had hadn't has hasn't have haven't having he her here hers herself him
    himself his how however i if in into is isn't it it's its itself just let let's like made
    make makes many may me might more most much must mustn't my myself need needs no nor not now
    of off on once one only or other our ours ourselves out over own per please put rather re
    really same shall she should shouldn't since so some still such than that that's the their
    theirs them themselves then there there's these they they're this those though through thus
    to too under until up upon us use used uses using very via was wasn't way we we're well were
    weren't what when where whether which while who whom whose why will with within without won't
    would wouldn't yes yet you you're your yours yourself yourselves
    il lo la le gli un una uno di da del della dei delle per con su che non è e o ma se come
    """
)

# Verbs of change and priority say how, not what: never a tag.
NOT_TAGS = word_set(
    "move moved moving switch switched migrate migrated upgrade upgraded change changed replace "
    "replaced prefer preferred decided decide always never avoid must should instead going "
    "want wants wanted remember note important critical"
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens, identifiers and versions kept whole, trailing dots trimmed."""
    return [w.lower().rstrip(".-") for w in WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Words that carry meaning: no stop words, no bare numbers, at least two characters."""
    return [w for w in words(text) if len(w) > 1 and w not in STOP_WORDS and not _is_number(w)]


_NUMBER = re.compile(r"[\d.,:/+-]+")


def _is_number(word: str) -> bool:
    return _NUMBER.fullmatch(word) is not None


def normalise_tags(tags: Iterable[str], limit: int) -> list[str]:
    """Trimmed, lower-cased, de-duplicated tags in their first order, at most `limit`."""
    out: list[str] = []
    for tag in tags:
        clean = " ".join(tag.strip().lower().split())
        if clean and clean not in out:
            out.append(clean)
        if len(out) >= limit:
            break
    return out


def pick_tags(text: str, limit: int = 5) -> list[str]:
    """Up to `limit` keywords: frequent words first, identifiers and names favoured, ties by order."""
    raw = WORD.findall(text)
    scores: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for position, token in enumerate(raw):
        word = token.lower().rstrip(".-")
        if len(word) < 3 or word in STOP_WORDS or word in NOT_TAGS or _is_number(word):
            continue
        weight = 1.0
        if any(c in token for c in "_.-#+") or (token[:1].isupper() and position > 0):
            weight += 0.5  # identifiers and names say more about the subject than plain words
        if token[1:] != token[1:].lower():
            weight += 0.5  # camelCase / PostgreSQL-style names
        scores[word] = scores.get(word, 0.0) + weight
        first_seen.setdefault(word, position)
    ranked = sorted(scores, key=lambda w: (-scores[w], first_seen[w]))
    return ranked[:limit]
