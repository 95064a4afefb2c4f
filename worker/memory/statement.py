"""A memory's text as the supersession rule (worker/memory/supersession.py) reads it: its keys in order
(meaning words stemmed, values kept whole), the cues that announce a change, what it retires or says
is gone, its clauses and main clauses. Pure functions of the text; the words they read are listed in
worker/memory/update_words.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

import snowballstemmer

from worker.memory.tags import STOP_WORDS, WORD, word_set
from worker.memory.update_words import (
    ABBREVIATIONS,
    AUXILIARIES,
    CHANGE_WORDS,
    COMMAND_INTRO,
    COMMAND_WORDS,
    DECISION_WORDS,
    DETERMINERS,
    ENVIRONMENTS,
    FORMER,
    LABEL_NOUNS,
    LEAVING,
    MOVE_CUES,
    NEGATIONS,
    NUMBER_WORDS,
    OFF_VERBS,
    PASSIVE,
    PREPOSITIONS,
    QUITTING,
    REGION_NAMES,
    RELATION_FORMS,
    RELATION_VERBS,
    REMOVALS,
    REPLACING,
    REVERSALS,
    SCOPES,
    SIZE_UNITS,
    TEST_PARTS,
    TEST_WORDS,
    TIME_UNITS,
    TIME_WORDS,
    UNIT_WORDS,
    UPDATE_CUES,
    USING,
)

MAX_WORDS = 300

_REGION = re.compile(
    r"(us|eu|ap|sa|ca|me|af|il|cn|mx)(-gov)?-[a-z]+-\d+[a-z]?"  # AWS: us-east-1, eu-west-2
    r"|[a-z]+-[a-z]+\d+(-[a-z])?"  # GCP: europe-west1, us-central1-a
)
# What may follow a removal ("was dropped") for its clause to say only that: the clause's end, or
# the replacement ("was renamed to acme"); not a restriction ("disabled for the docs repo").
_ALONE = re.compile(r"\s*(?:$|[.;,!?)]|(?:to|by|with)\s)")
# Identifiers, versions, paths and URLs stay whole: "docs/api.md", "https://api.acme.dev".
_TOKEN = re.compile(r"[^\W_][\w./+#:~@-]*[\w+#/]|[^\W_]", re.UNICODE)
DIGIT = re.compile(r"\d")
# ", never X" after a statement: X is set against it, not a rule of its own.
_COUNTER = re.compile(r",\s*never\s+", re.IGNORECASE)
# Where one clause ends and another starts: "; " or a full stop before a capital.
_CLAUSE = re.compile(r";\s+|(?<=[.!?])\s+(?=[A-Z])")
# Where the reason for a statement begins ("... to port 5433 to avoid clashing with ...").
_REASON = re.compile(
    r",?\s+(?:because|since|so that|so as to|to avoid|to prevent|in order to|as part of|due to"
    r"|now that|which|as of|so (?=(?:we|they|it|you|people|users|nobody|no one)\b))\b",
    re.IGNORECASE,
)
# A text that opens with its reason or occasion ("After the outage last week, ...", "Per the
# new policy, ...", "Starting Monday, ...").
_OPENS_WITH_REASON = re.compile(
    r"\s*(?:after|following|since|because|as|given|due to|once|now that|per|according to"
    r"|starting|beginning|effective)\b",
    re.IGNORECASE,
)
# Where a coordinated clause begins: "..., and the Docker build moved to ...".
# A label that says a decision changed: "Decision changed: ...", "Policy update: ...".
_CHANGED_DECISION = re.compile(
    r"\s*(?:decision|policy)\s+(?:changed|change|updated|update|revised|revisited)\b"
    r"|.*\b(?:changed|change)\s+(?:our|my)\s+minds?\b|.*\bchange\s+of\s+plans?\b"
    r"|.*\b(?:after all|on second thought|scratch that)\b",
    re.IGNORECASE,
)
_COORDINATED = re.compile(r",\s+(?:and|but|so)\s+", re.IGNORECASE)
# A word after "local" that is not an environment's: "local disk", "local install".
_NEXT_WORD = re.compile(
    r" (?!(?:dev|development|env|environment|setup|machine|machines|laptop|laptops|testing|run|"
    r"runs|stack)\b)[a-z]",
    re.IGNORECASE,
)
_WORD_AFTER = re.compile(r"\s*([A-Za-z]+)")
# Words that say a thing passed from one holder to another: "Sara took over as tech lead",
# "the pipeline was handed over to Lucia", "ownership passed to the Infra team".
_HANDED = re.compile(
    r"\b(?:took|takes|taken|taking|take)\s+over\b"
    r"|\b(?:hand(?:ed|s|ing)?|pass(?:ed|es|ing)?|transferr?(?:ed|ing|s)?|reassign(?:ed|s)?)"
    r"\s+(?:over\s+|off\s+|back\s+)?to\b",
    re.IGNORECASE,
)
# Words that say since when a statement holds ("since the reorg", "as of this sprint", "starting
# Monday"): a state that began, so a change (of a holder, see update_patterns.holder_changed).
_DATED = re.compile(r"\b(?:since|as of|starting|effective)\b", re.IGNORECASE)
# Words that say a statement adds to what holds, not that it replaces it: "... is now offered in
# Belgium too", "the bot also posts ...", "... in Spanish as well" ("too" before a word is a degree).
_ADDITIVE = re.compile(
    r"\b(?:also|additionally|in addition)\b|\b(?:too|as well)(?=\s*(?:$|[.;,!?)]))",
    re.IGNORECASE,
)
STEMMER = snowballstemmer.stemmer("english")
REGION_STEMS = frozenset(STEMMER.stemWords(sorted(REGION_NAMES)))


@dataclass(frozen=True)
class Key:
    key: str  # what is compared: a value lower-cased whole, a word by its stem
    value: bool  # a number, version, path, identifier or name
    qualifier: bool  # an environment, region or label: which one, not what it is
    before: str  # the word before it (lower-cased), to tell "moved to eu-west-1"
    joined: bool = False  # a value that goes on a name: "Hub" in "Docker Hub"
    relation: bool = False  # a verb form that only relates subject and value: "shipped to"
    unit: str = ""  # what a number measures: "%" in "80%", "second" in "30 seconds"
    scoped: bool = False  # in a phrase that says what for or of: "for the web server"
    capital: bool = False  # written with a capital: a name, or a sentence's first word


@dataclass(frozen=True)
class Features:
    words: tuple[str, ...]  # every word in order
    terms: frozenset[str]  # subject and value words (no stop/change/negation words)
    values: frozenset[str]  # the terms that are values
    negated: bool
    keys: tuple[Key, ...] = ()  # terms in order, as compared by the supersession rule
    cues: frozenset[str] = frozenset()  # update cues the text holds ("now", "instead", ...)
    contrast: bool = False  # "X, not Y" / "instead of Y" / "rather than Y": Y is retired
    headed: bool = False  # starts with a determiner: its first key is the sentence's subject
    retired: frozenset[str] = frozenset()  # keys after "not" / "instead of" / "from ... to"
    clauses: tuple[str, ...] = ()  # the text's clauses, when there are two or more
    # keys a clause says are gone ("Jest was removed"), or renamed ("=acmectl": "acmectl was
    # renamed to acme")
    dropped: frozenset[str] = frozenset()
    # keys of a clause that says a former one is gone ("the old search page was removed")
    former: frozenset[str] = frozenset()
    marked: bool = False  # the text calls something old, legacy or former
    # a long text's main clauses, each with the keys of what was cut away from it and whether
    # that was only a reason or occasion ("to avoid clashing with a local install")
    fragments: tuple[tuple[str, frozenset[str], bool], ...] = ()
    reverses: bool = False  # says a decision was reversed ("Decision reversed: ...")
    decided: bool = False  # states a decision ("Decision: ...", "we decided ...")
    contrasted: frozenset[str] = frozenset()  # retired keys, but by a contrast: "not alembic"
    additive: bool = False  # says it adds to what holds: "also", "too", "as well"
    handed: bool = False  # says a thing passed to another holder: "took over", "handed to"
    dated: bool = False  # says since when it holds: "since the reorg", "as of March"
    # ", never X": the keys of X, and those of what the text says instead (before the comma)
    countered: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
    # contrasted keys that end their clause or give way to the new one ("not Mailgun.", "from
    # MySQL to Postgres", "stopped using Slack;"): retired outright, not "for runbooks" only
    replaced: frozenset[str] = frozenset()


# Verbs that only relate a subject to its value ("runs on", "lives in"): a change of them is wording.
RELATION_STEMS = frozenset(STEMMER.stemWords(sorted(RELATION_VERBS)))
# Units after a number belong to its value: "7 days" -> "24 hours" changes one slot, not two.
UNIT_STEMS = frozenset(STEMMER.stemWords(sorted(UNIT_WORDS)))
# What a unit measures: "24 hours" and "7 days" are both a time, "50 MB" and "1 GiB" a size.
_DIMENSIONS = {
    **{stem: "time" for stem in STEMMER.stemWords(sorted(TIME_UNITS))},
    **{stem: "size" for stem in STEMMER.stemWords(sorted(SIZE_UNITS))},
}


def dimension(unit: str) -> str:
    """What a unit (a Key's `unit`) measures: "time", "size", or the unit itself ("%")."""
    return _DIMENSIONS.get(unit, unit)


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
            or _contracted_not(text, match.end())
            or (word == "not" and before in AUXILIARIES)
            or (word in ("longer", "more") and before == "no")
            or (word == "off" and before in OFF_VERBS)
        ):
            negated = True
            continue
        if word in STOP_WORDS or word in CHANGE_WORDS or (len(word) < 2 and not word.isdigit()):
            continue
        terms.add(word)
        is_name = (token[:1].isupper() and not starts) or token[1:] != token[1:].lower()
        if DIGIT.search(word) or is_name or "_" in word:
            values.add(word)
    keys, cues, retired, headed, dropped, former, contrasted, replaced = _keys(text)
    parts = [part for part in _CLAUSE.split(text) if part.strip()]
    clauses = tuple(parts) if len(parts) > 1 else ()
    return Features(
        tuple(sequence),
        frozenset(terms),
        frozenset(values),
        negated,
        keys,
        cues,
        bool(retired) or "instead" in cues or "rather" in cues,
        headed,
        retired,
        clauses,
        dropped,
        former,
        any(word in FORMER for word in sequence),
        _fragments(text),
        any(word in REVERSALS for word in sequence) or _CHANGED_DECISION.match(text) is not None,
        any(word in DECISION_WORDS for word in sequence),
        contrasted,
        _ADDITIVE.search(text) is not None,
        _HANDED.search(text) is not None,
        _DATED.search(text) is not None,
        _countered(text),
        replaced,
    )


def _fragments(text: str) -> tuple[tuple[str, frozenset[str], bool], ...]:
    """The main clauses of a long text, without its reasons or occasions ("..., to avoid ...",
    "After the outage, ...") or without the clause coordinated with them ("..., and ..."); each
    with the keys of the part cut away, and whether that part was a reason. An opening or a
    coordinated clause that holds an environment, region or label is never cut away: it may say
    which one the rest is of ("Starting in production, ...", "In production, logs go to ..., and
    ..."); a trailing reason may ("to avoid clashing with a local install")."""
    cuts: list[tuple[str, str, bool, bool]] = []  # kept, cut, a reason, may say which one
    reason = _REASON.search(text)
    if reason is not None:
        cuts.append((text[: reason.start()], text[reason.start() :], True, False))
    if _OPENS_WITH_REASON.match(text):
        for comma in (i for i, c in enumerate(text) if c == ","):
            rest = text[comma + 1 :].strip()
            if rest and rest.split()[0].lower() not in ("which", "who", "and", "but"):
                cuts.append((rest, text[:comma], True, True))
    for joint in _COORDINATED.finditer(text):
        cuts.append((text[: joint.start()], text[joint.start() :], False, True))
        cuts.append((text[joint.end() :], text[: joint.start()], False, True))
    out: list[tuple[str, frozenset[str], bool]] = []
    for kept, cut, reason_only, scoping in cuts:
        cut_keys = _keys(cut).keys
        if kept.strip() and not (scoping and any(k.qualifier for k in cut_keys)):
            out.append((kept, frozenset(k.key for k in cut_keys), reason_only))
    return tuple(out)


class _Parsed(NamedTuple):
    keys: tuple[Key, ...]
    cues: frozenset[str]
    retired: frozenset[str]
    headed: bool
    dropped: frozenset[str]
    former: frozenset[str]
    contrasted: frozenset[str]  # retired by "not", "instead of", "from ... to" (no removal)
    replaced: frozenset[str]  # contrasted keys at their clause's end or before "to"


def _keys(text: str) -> _Parsed:
    """The text's keys in order, its update cues, the keys it retires ("pnpm, not npm"), whether
    it is headed by its subject (a determiner or a key first: "The web app ..."), the keys of
    a clause that only says they are gone ("the .env file was deleted", "acmectl was renamed to
    acme"; not "Dependabot is disabled for the docs repo"), the keys of a clause that says a
    former one is gone ("the old search page was removed": they stay, as the current one), and
    the keys a contrast retires ("not npm", "instead of black"; a removal's are not among them)."""
    keys: list[Key] = []
    cues: set[str] = set()
    retired: set[str] = set()
    contrasted: set[str] = set()  # retired by "not", "instead of", "from ... to" only
    replaced: set[str] = set()  # contrasted at the clause's end or before the new one
    dropped: set[str] = set()
    former: set[str] = set()
    clause: list[str] = []  # keys since the clause began
    old_one = False  # the clause calls its thing old, legacy or former
    retiring: list[str] | None = None  # keys after a retiring word, in this clause
    moving = False  # "from X": X is retired only once "to Y" follows
    headed = False
    sentence_start = True
    previous = ""
    value_end = -1  # where the last key ended, if it was a value
    scoped = False  # after "for" / "of" / "as", before another preposition or a stop
    for position, match in enumerate(_TOKEN.finditer(text)):
        if position >= MAX_WORDS:
            break
        token = match.group(0).rstrip("/")
        lower = token.lower()
        starts = sentence_start
        follows = text[match.end() : match.end() + 1]
        sentence_start = follows in (".", "!", "?", ":", ";", "\n")
        before, previous = previous, lower
        if lower in SCOPES:
            scoped = True
        elif lower in PREPOSITIONS or lower in ("by", "with", "from", "via", "through"):
            scoped = False
        if lower in UPDATE_CUES:
            cues.add(lower)
        old_one = old_one or lower in FORMER
        if lower in REMOVALS and before in PASSIVE and clause and old_one:
            former.update(clause)  # "the old search page was removed": not the current one
        elif lower in REMOVALS and before in PASSIVE and clause:
            retired.update(clause)  # "ESLint and Prettier were removed"
            if _ALONE.match(text, match.end()):
                # A rename retires only the name: "acmectl was renamed" leaves "acmectl needs a
                # token" true of the tool; a removal retires all that was said of the thing.
                dropped.update(clause if lower != "renamed" else ("=" + k for k in clause))
        if (
            (lower == "not" and before not in AUXILIARIES)
            or lower in ("instead", "rather", "from")
            or (lower == "off" and before in MOVE_CUES)  # "moved off Grafana Cloud"
            or (lower in REPLACING and before not in PASSIVE)  # "Biome replaced ESLint"
            or (lower in USING and before in QUITTING)  # "stopped using Slack"
            or lower in LEAVING  # "since we ditched Pingdom"
        ):
            retiring, moving = [], lower == "from"  # "not npm", "instead of black", "from Heroku"
        elif lower in ("to", "with", "into") and retiring is not None:
            if not moving or lower != "with":
                retired.update(retiring)
                contrasted.update(retiring)
                replaced.update(retiring)
            retiring = None
        letter = len(token) == 1 and token.isupper() and token != "I" and not starts
        negation = (
            lower in NEGATIONS
            or lower in ("not", "no")
            or _contracted_not(text, match.end())
            or (lower == "off" and before in OFF_VERBS)
        )
        spelled = lower in NUMBER_WORDS
        # "make dev", "make deploy": the tool, not the verb (after a word that introduces a command)
        tool = lower in COMMAND_WORDS and before in COMMAND_INTRO and follows == " "
        # "US", "UK" in capitals are regions, not the pronoun or a stop word
        shouted = token.isupper() and lower in REGION_NAMES
        filler = not (letter or spelled or tool or shouted) and (
            lower in STOP_WORDS
            or lower in CHANGE_WORDS
            or lower in TIME_WORDS
            or (len(token) < 2 and not token.isdigit())
        )
        if negation or filler:
            if retiring and not moving:
                retired.update(retiring)  # "instead of npm | for installing": only npm
                contrasted.update(retiring)
                retiring = None
            continue
        if not keys:
            headed = position == 0 or (position == 1 and before in DETERMINERS)
        numeric = spelled or bool(DIGIT.search(token))
        is_value = (
            tool
            or numeric
            or letter
            or any(c in token for c in "/_@")
            or "." in token.strip(".")
            or (token[:1].isupper() and not starts)
            or token[1:] != token[1:].lower()
        )
        hashed = text[match.start() - 1 : match.start()] == "#"
        label = letter or (numeric and (hashed or before in LABEL_NOUNS))
        region = lower in REGION_NAMES or _REGION.fullmatch(lower) is not None
        # "local" names an environment ("local dev", "runs local"), not a disk or an install
        environment = lower in ENVIRONMENTS and not (
            (lower == "local" and _NEXT_WORD.match(text, match.end()) is not None)
            or (lower in TEST_WORDS and _kind_of_test(before, text, match.end()))
        )
        qualifier = label or region or environment
        word = ABBREVIATIONS.get(lower, lower)
        key = STEMMER.stemWord(word) if word.isalpha() else word
        if hashed and not numeric:
            key = "#" + lower  # a channel or anchor name: "#alerts" is not "alerts"
        joined = is_value and value_end >= 0 and text[value_end : match.start()] == " "
        value_end = match.end() if is_value else -1
        relation = key in RELATION_STEMS or lower in RELATION_FORMS
        unit = _unit(text, match.end()) if numeric and not label else ""
        capital = token[:1].isupper()
        keys.append(Key(key, is_value, qualifier, before, joined, relation, unit, scoped, capital))
        clause.append(key)
        if retiring is not None:
            retiring.append(key)
        if follows in (",", ";", ".", ":", ")", "!", "?"):
            scoped = False
            clause, old_one = [], False
        if follows in (",", ";", ".", ":", ")") and retiring is not None:
            if not moving:
                retired.update(retiring)
                contrasted.update(retiring)
                replaced.update(retiring)
            retiring = None
    if retiring is not None and not moving:
        retired.update(retiring)
        contrasted.update(retiring)
        replaced.update(retiring)
    return _Parsed(
        tuple(keys),
        frozenset(cues),
        frozenset(retired),
        headed,
        frozenset(dropped),
        frozenset(former),
        frozenset(contrasted),
        frozenset(replaced),
    )


def _countered(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """ "Store timestamps as UTC, never local time": what ", never" sets aside (up to the clause's
    end) and the keys of what comes before it; empty when the text has no such contrast."""
    found = _COUNTER.search(text)
    if found is None:
        return frozenset(), frozenset()
    rest = re.split(r"[.;,!?]", text[found.end() :], maxsplit=1)[0]
    instead = text[: found.start()]
    return frozenset(k.key for k in _keys(rest).keys), frozenset(k.key for k in _keys(instead).keys)


def _kind_of_test(before: str, text: str, end: int) -> bool:
    """ "test" that names a kind of test or a test's part, not the environment: after a word that
    is neither a preposition nor a determiner ("the load test", "unit tests"), or before one
    that says which part ("the test suite", "test files")."""
    after = _WORD_AFTER.match(text, end)
    if after is not None and text[end : end + 1] == " " and after.group(1).lower() in TEST_PARTS:
        return True
    return bool(before) and before not in PREPOSITIONS | DETERMINERS | word_set("and or from for")


def _unit(text: str, end: int) -> str:
    """The unit after a number ending at `end`: "%" or a unit word's stem ("30 seconds")."""
    if text[end : end + 1] == "%":
        return "%"
    after = _WORD_AFTER.match(text, end)
    if after is None:
        return ""
    stem = STEMMER.stemWord(after.group(1).lower())
    return stem if stem in UNIT_STEMS else ""


def _contracted_not(text: str, end: int) -> bool:
    """The word ends in n't ("don't", either apostrophe): the word pattern stops at the apostrophe."""
    return text[end : end + 2] in ("'t", "\u2019t") and text[end - 1 : end] in ("n", "N")


def is_region(key: str) -> bool:
    """A region's key: a named one ("frankfurt") or a cloud's ("us-east-1", "europe-west1")."""
    return key in REGION_STEMS or _REGION.fullmatch(key) is not None


def search_terms(found: Features, limit: int = 12) -> list[str]:
    """Words to find candidate memories by: the values first, then the longest subject words."""
    subject = sorted(found.terms - found.values, key=lambda w: (-len(w), w))
    return [*sorted(found.values), *subject][:limit]
