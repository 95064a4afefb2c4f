"""The shapes of an update the supersession verdict (worker/memory/supersession.py) recognises
beyond one aligned slot: a measure or a version at another figure, a holder handed on, names
retired, a slot reworded, a reversal said in words, a bump, a move. Each reads two texts' keys
(worker/memory/statement.py) and says yes or no; the verdict decides what a yes means.
"""

from __future__ import annotations

import re

from worker.memory.statement import (
    DIGIT,
    RELATION_STEMS,
    STEMMER,
    Features,
    Key,
    dimension,
    is_region,
)
from worker.memory.update_words import (
    BUMP_CUES,
    DETERMINERS,
    HANDING_WORDS,
    MEASURE_NOUNS,
    MOVE_CUES,
    NUMBER_WORDS,
    PLACES,
    PREPOSITIONS,
    ROLE_WORDS,
)

MEASURE_STEMS = frozenset(STEMMER.stemWords(sorted(MEASURE_NOUNS)))
ROLE_STEMS = frozenset(STEMMER.stemWords(sorted(ROLE_WORDS)))
HANDING_STEMS = frozenset(STEMMER.stemWords(sorted(HANDING_WORDS)))
_DIGITS = re.compile(r"\d+")


def measured_anew(new: Features, old: Features) -> bool:
    """Each text has one measured number (a unit: "days", "MB", "%"), of the same dimension, at
    another figure; the new text announces a change, restates the old one's first key, and
    before its figure adds no word but a measure noun ("timeout", "cap", "retention"): what
    follows the figure is an adjunct ("after the audit"), what precedes it the subject."""
    mine = [i for i, k in enumerate(new.keys) if k.unit]
    theirs = [k for k in old.keys if k.unit]
    if not (len(mine) == len(theirs) == 1 and new.cues - old.cues and old.keys):
        return False
    figure, was = new.keys[mine[0]], theirs[0]
    if dimension(figure.unit) != dimension(was.unit) or (figure.key, figure.unit) == (
        was.key,
        was.unit,
    ):
        return False
    said = {k.key for k in old.keys}
    if old.keys[0].key not in {k.key for k in new.keys}:
        return False
    before = new.keys[: mine[0]]
    added = {k.key for k in before if not k.relation and not k.qualifier} - said
    return not any(k.value for k in before if k.key in added) and added <= MEASURE_STEMS


def _versions(found: Features) -> list[int]:
    """Where the text's versions stand: values with a digit that measure nothing and label
    nothing ("1.21", "nodejs16.x", "02:00"; not "30 seconds", "shard 2", "#118")."""
    return [
        i
        for i, k in enumerate(found.keys)
        if k.value and DIGIT.search(k.key) and not k.unit and not k.qualifier
    ]


def versioned_anew(new: Features, old: Features) -> bool:
    """Each text gives one version, the two differ, and they are of the same thing: the name
    before the old one is named in the new text, or both are one token alike but for their
    digits ("nodejs16.x" / "nodejs20.x"). The new text announces a change and restates the old
    one's subject: its first key, or, when that is the versioned name itself, all of its words.
    Before its version it adds nothing but a measure noun (after it are adjuncts: "in CI once
    ...")."""
    mine, theirs = _versions(new), _versions(old)
    if not (len(mine) == len(theirs) == 1 and new.cues - old.cues):
        return False
    i, j = theirs[0], mine[0]
    was, now = old.keys[i].key, new.keys[j].key
    if was == now:
        return False
    named = {k.key for k in new.keys}
    glued = _DIGITS.sub("#", was) == _DIGITS.sub("#", now) and not was[:1].isdigit()
    name = old.keys[i - 1].key if i > 0 else None
    if not glued and (name is None or DIGIT.search(name) or name not in named):
        return False
    said = {k.key for k in old.keys}
    head = old.keys[0].key
    if head == name:
        words = {k.key for k in old.keys if not k.value and not k.relation}
        if not words <= named:
            return False
    elif head not in named and old.words[:1] != ("we",):
        return False  # (after "we" the first key is a verb: "We stay on eslint 8 ...")
    added = {k.key for k in new.keys[:j] if not k.relation} - said
    if any(k.value for k in new.keys[:j] if k.key in added):
        return False
    # One token alike but for its digits names the thing itself ("python:3.12-slim"): words
    # before it may only say where it is set ("Base image in the Dockerfile updated to ...").
    return glued or added <= MEASURE_STEMS


def holder_changed(new: Features, old: Features) -> bool:
    """Each text names one holder (a word with a capital, not a role word) the other lacks, and
    says the same of the same thing otherwise; the new one says it was handed on ("took over",
    "passed to"), or, with a word of ownership in either text, announces a change or says since
    when it holds ("since the reorg")."""
    roles = any(k.key in ROLE_STEMS for k in (*old.keys, *new.keys))
    if not (new.handed or (roles and (new.cues - old.cues or new.dated))):
        return False
    mine, theirs = {k.key for k in new.keys}, {k.key for k in old.keys}

    def holders(found: Features, other: set[str]) -> list[str]:
        return [
            k.key
            for k in found.keys
            if k.capital and k.key not in other and k.key not in ROLE_STEMS and not k.qualifier
        ]

    gone, came = holders(old, mine), holders(new, theirs)
    if not (len(gone) == len(came) == 1):
        return False
    rest = {k.key for k in old.keys if not k.relation} - ROLE_STEMS - {gone[0]}
    told = {k.key for k in new.keys if not k.relation} - ROLE_STEMS - HANDING_STEMS - {came[0]}
    return bool(rest) and rest <= mine and told <= theirs


def names_retired(new: Features, old: Features, theirs: set[str]) -> bool:
    """Each name of the old text (a run of joined names counts once: "HashiCorp Vault") has a
    word the new text retires outright, the old text negates nothing, and the new one names
    something new or says the old one is no longer used. A word the new text retires outright
    is a name even when written in lower case ("switched from yarn to pnpm"), and what the new
    text names instead must be announced; nothing new may be said to be for something ("for the
    docs site"): then the old one is retired only there."""
    gone = new.replaced - old.retired
    runs: list[set[str]] = []
    for k in old.keys:
        if not (k.value or k.key in gone) or DIGIT.search(k.key):
            continue
        if k.joined and runs:
            runs[-1].add(k.key)
        else:
            runs.append({k.key})
    if not runs or old.negated or not all(run & gone for run in runs):
        return False
    fresh = [k for k in new.keys if k.key not in theirs]
    if any(k.scoped for k in fresh):
        return False
    mine = {k.key for k in new.keys}
    if (
        new.headed
        and new.words[:1] != old.words[:1]
        and new.words[0] not in DETERMINERS
        and new.keys[0].key not in theirs
        and old.keys[0].key not in mine
    ):
        return False  # a subject of its own, the old one not named: "Helm charts moved from GHCR"
    if new.negated or any(k.value for k in fresh):
        return True
    return bool(fresh and new.cues - old.cues)


def reworded(new: Features, old: Features, slots: list[tuple[list[str], list[str]]]) -> bool:
    """One slot is values for values, the other words for words, none of them a value or in a
    phrase that says what the statement is for or of, and the new text keeps the old head."""
    valued = {k.key for k in (*old.keys, *new.keys) if k.value}
    scoped = {k.key for k in (*old.keys, *new.keys) if k.scoped}
    kinds = sorted(
        (all(w in valued for w in gone + came), any(w in valued for w in gone + came))
        for gone, came in slots
    )
    if kinds != [(False, False), (True, True)]:
        return False
    said, told = next(slot for slot in slots if not set(slot[0] + slot[1]) & valued)
    if len(told) > len(said):
        return False  # more words than it replaced: a part or another thing ("its export job")
    words = said + told
    gone, came = next(slot for slot in slots if set(slot[0] + slot[1]) & valued)
    numeric = {k.key for k in (*old.keys, *new.keys) if k.value and k.unit == "" and _number(k)}
    if any(w in numeric for w in gone) != any(w in numeric for w in came):
        return False  # a name for a number ("the Jenkins UI" / "two approvals"): no value's twin
    if set(words) & MEASURE_STEMS:
        return False  # another measure of the subject: "timeout" / "retry delay"
    if old.words[:1] == ("we",):
        return False  # after "we" the first key is a verb: the subject may be what was reworded
    return not set(words) & scoped and old.keys[0].key in {k.key for k in new.keys}


def _number(key: Key) -> bool:
    """A number in digits or words ("30", "1.5", "two"), not a name with a digit in it."""
    return key.key in NUMBER_WORDS or DIGIT.match(key.key) is not None


def sibling(
    a: list[str], b: list[str], slot: tuple[list[str], list[str]], valued: set[str]
) -> bool:
    """The slot is the first words of both texts (after the same determiner), words (no values,
    no names) before the same noun: "the orders table" / "the events table" name two of a kind,
    whatever cue the new text carries."""
    gone, came = slot
    if set(gone) & valued or set(came) & valued or a[0] != gone[0] or b[0] != came[0]:
        return False
    i, j = len(gone), len(came)
    return i < len(a) and j < len(b) and a[i] == b[j]


def remeasured(new: Features, old: Features) -> bool:
    """Both texts headed by the same key, one measured number each (a unit: "%", "seconds"), in
    the same unit at another figure, and the new text adds one word at most besides."""
    mine = [k for k in new.keys if k.unit]
    theirs = [k for k in old.keys if k.unit]
    if not (len(mine) == len(theirs) == 1 and old.headed and new.headed):
        return False
    if old.keys[0].key != new.keys[0].key or mine[0].unit != theirs[0].unit:
        return False
    said = {k.key for k in old.keys}
    added = {k.key for k in new.keys if not k.value and not k.relation} - said
    return mine[0].key != theirs[0].key and len(added) <= 1


def restated(new: Features, old: Features) -> bool:
    """Every word of `new` that is no value the old text says too, and each text has a number
    the other lacks (a time, a size, a count), and no other new value: the new one names no
    other subject or thing ("upgraded to React 18" of "uses Redux 4"), only another number; or
    names, when a move or switch says the one replaced the other ("Secrets moved to AWS
    Secrets Manager" of "Secrets are kept in Vault")."""
    theirs = {k.key for k in old.keys}
    mine = {k.key for k in new.keys}
    words = {k.key for k in new.keys if not k.value}
    new_values = {k.key for k in new.keys if k.value} - theirs
    old_values = {k.key for k in old.keys if k.value} - mine
    numbers = all(DIGIT.search(v) for v in new_values | old_values)
    moved = bool((new.cues - old.cues) & MOVE_CUES)  # "Secrets moved to AWS Secrets Manager"
    return (
        bool(words) and words <= theirs and bool(new_values and old_values) and (numbers or moved)
    )


def reversal(new: Features, old: Features) -> float | None:
    """If `new` says a decision was reversed, `old` is a decision (not itself a reversal), and
    the new text names the old one's subject (its first key that is not a relation verb, the
    parts of hyphenated words compared too: "the no-ORM decision" names "no ORM"): the share of
    the old keys the new text names."""
    if not (new.reverses and old.decided) or old.reverses:
        return None
    subject = next((k.key for k in old.keys if not k.relation), None)
    named = {k.key for k in new.keys}
    named |= {STEMMER.stemWord(part) for k in new.keys if "-" in k.key for part in k.key.split("-")}
    if subject not in named:
        return None
    theirs = {k.key for k in old.keys}
    return len(theirs & named) / len(theirs)


def bumped(
    new: Features, old: Features, a: list[str], b: list[str], slot: tuple[list[str], list[str]]
) -> bool:
    """A version bump announced as one ("upgraded", "bumped", "migrated"), of the same subject
    (both texts headed by the same key), the first slot a version after the same name: what
    else changed came with the bump."""
    gone, came = slot
    if not (new.cues - old.cues) & BUMP_CUES or not (old.headed and new.headed and a[0] == b[0]):
        return False
    if not (len(gone) == len(came) == 1 and DIGIT.search(gone[0]) and DIGIT.search(came[0])):
        return False
    i, j = a.index(gone[0]), b.index(came[0])
    return i > 0 and j > 0 and a[i - 1] == b[j - 1]


def versioned(gone: list[str], came: list[str]) -> bool:
    """The old side holds a number the new side has none of ("Node 18" / "the payments cluster")."""
    return any(DIGIT.search(w) for w in gone) and not any(DIGIT.search(w) for w in came)


def placed(old: Features, key: str) -> bool:
    """The old text names `key` as a place or a predicate ("lives in X", "is X"), what a move
    can change; not as what the subject runs or uses ("runs Node 18")."""
    return any(k.key == key and k.before in PLACES for k in old.keys)


def moved(new: Features, came: set[str], removed: set[str]) -> bool:
    """A location that moved: "migrated the bucket to eu-west-1" (a move cue, each new qualifier
    after a preposition, and the old text lost no more than that: only the place changed)."""
    movers = new.cues & MOVE_CUES
    if "now" in new.cues and all(is_region(k) for k in came):
        movers = movers | {
            "now"
        }  # "the bucket now lives in eu-west-1" (not "now ... in production")
    placed = {k.key for k in new.keys if k.key in came and k.before in PREPOSITIONS}
    moved = removed - RELATION_STEMS  # "runs in us-west-2" -> "moved ... to us-east-2"
    return bool(movers and came and placed == came and len(moved) <= len(came))
