"""Supersession without an LLM: same subject, one changed value -> the newer memory updates the older.

Each memory becomes a sequence of keys (worker/memory/statement.py): its meaning words (stemmed, so
"bundled" meets "bundle") and its values (numbers, versions, paths, URLs, identifiers, names), kept
whole. Aligning the two sequences shows what changed and where:

- an update restates the subject and changes ONE slot: "PostgreSQL 15" -> "PostgreSQL 16" for
  the database; or it keeps the old value and retires it ("ruff instead of black", "we no longer
  read flags from LaunchDarkly", "moved from Heroku to Fly.io"); or it negates the old statement;
- two facts that both stay true differ in what they are about: a qualifier (an environment such
  as staging / production, a region such as us-east-1, a label such as "suite A", "shard 2",
  "#118"), the subject at the head of the sentence ("the web app" / "the admin app"), or two
  slots at once ("fact number 1: needs a login" / "fact number 2: sends a receipt").

When the words overlap too little to tell (a paraphrase), the verdict is `unknown` and the caller
may decide by the embedding cosine; a `distinct` verdict is final. A wrong supersession hides a
true fact, a missed one leaves two versions side by side: in doubt, the rule says distinct.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from dataclasses import dataclass

from worker.memory.statement import (
    DIGIT,
    RELATION_STEMS,
    STEMMER,
    UNIT_STEMS,
    Features,
    Key,
    dimension,
    features,
    is_region,
)
from worker.memory.update_words import (
    BUMP_CUES,
    DETERMINERS,
    HANDING_WORDS,
    MEASURE_NOUNS,
    MOVE_CUES,
    NUMBER_WORDS,
    PLACE_CUES,
    PLACES,
    PREPOSITIONS,
    REMOVALS,
    ROLE_WORDS,
)

RELATION_KINDS = ("updates", "extends", "derives")
MEASURE_STEMS = frozenset(STEMMER.stemWords(sorted(MEASURE_NOUNS)))
ROLE_STEMS = frozenset(STEMMER.stemWords(sorted(ROLE_WORDS)))
HANDING_STEMS = frozenset(STEMMER.stemWords(sorted(HANDING_WORDS)))
# An identifier, path or file name: what a lesson or fact is about ("test_payment_webhook").
_IDENTIFIER = re.compile(r"[_/.]")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Verdict:
    kind: str  # "update", "distinct" (final), or "unknown" (the words cannot tell)
    score: float = 0.0  # subject similarity in 0..1, for an update
    reversal: bool = False  # an update only by a reversal said in words: one per save


DISTINCT = Verdict("distinct")
UNKNOWN = Verdict("unknown")


def judge(new: Features, old: Features, min_similarity: float = 0.5) -> Verdict:
    """Does `new` update `old`, state another fact (`distinct`), or can the words not tell?

    A long text updates when its main clause alone does, its reasons set aside ("now maps
    Postgres to port 5433 to avoid clashing with a local install"; a reason set aside says
    nothing of the old text, a coordinated clause names no environment, region or label).
    A text of several clauses updates when one of its clauses alone does ("Pre-commit no longer
    runs mypy; mypy runs in CI only": the first retires the old statement, the second adds one).
    """
    verdict = _judge(new, old, min_similarity)
    if verdict.kind == "update":
        return verdict
    for text in new.clauses:
        alone = _judge(_clause_features(text), old, min_similarity)
        if alone.kind == "update":
            return alone
    said = {k.key for k in old.keys}
    for text, cut, reason_only in new.fragments:
        if reason_only and cut & said:
            continue  # what was cut speaks of the old text's subject: not only a reason
        part = _clause_features(text)
        if new.dated and not part.dated:
            part = dataclasses.replace(part, dated=True)  # "..., since the reorg": still dated
        alone = _judge(part, old, min_similarity)
        if alone.kind == "update":
            return alone
    return verdict


@functools.lru_cache(maxsize=256)
def _clause_features(text: str) -> Features:
    """One clause's features: the same new text is judged against every candidate of a save."""
    return features(text)


def _judge(new: Features, old: Features, min_similarity: float) -> Verdict:
    a = [k.key for k in old.keys]
    b = [k.key for k in new.keys]
    mine, theirs = set(b), set(a)
    flipped = new.negated != old.negated
    removed, added = theirs - mine, mine - theirs
    shared = mine & theirs
    if not (removed or added or flipped or new.retired != old.retired):
        return DISTINCT  # the same statement ("use X, not Y" / "use Y, not X" is not)
    if new.additive and not (flipped or new.retired or new.dropped):
        return DISTINCT  # one more that holds: "enabled for Argentina too", "also posts to #ci"
    reversal = _reversal(new, old)
    if not shared and reversal is None:
        return UNKNOWN
    if a[0] in new.former and not old.marked:
        return DISTINCT  # "the old search page was removed" / "the search page uses Algolia"
    qualifiers = {k.key for k in old.keys if k.qualifier and k.key in removed} | {
        k.key for k in new.keys if k.qualifier and k.key in added
    }
    if qualifiers and not _moved(new, qualifiers & added, removed):
        return DISTINCT  # staging / production, us-east-1 / eu-west-1, suite A / suite B
    if reversal is not None:
        # "Decision reversed: notifications get split out of the monolith" of "Decision: keep
        # the monolith": a reversal said in so many words, of the decision about that subject.
        return Verdict("update", _score(a, b, reversal), reversal=True)
    if _measured_anew(new, old) and not flipped:
        # The old subject's one measure at another figure, the change announced, the words before
        # the figure the old ones and a measure noun at most: "Refresh token lifetime shortened
        # to 24 hours after the audit" of "Refresh tokens are valid for 7 days".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    if _versioned_anew(new, old) and not flipped:
        # The one version (or time) the old text gives, after the same name, at another figure,
        # the change announced, nothing new before it: "Bumped Go to 1.22 in CI" of "CI builds
        # every service with Go 1.21"; "Lambda runtime updated to nodejs20.x" of "... nodejs16.x".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    if not flipped and _holder_changed(new, old):
        # The same thing, another holder, the hand-over said: "Sara took over as tech lead for
        # the mobile app" of "Tom is the tech lead for the mobile app".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    set_aside, instead = new.countered
    said = {k.key for k in old.keys if not k.relation}
    if set_aside and set_aside == said - instead and a[0] in instead and not old.negated:
        # ", never X" where X is just what the old text said in place of the new value: "Store
        # timestamps as UTC in the database, never local time" of "... as local time in ...".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    if _names_retired(new, old, theirs):
        # Every name the old text gives is retired outright, and the new text says what came
        # instead or that it is no longer used: "Emails go out via Postmark now, not Mailgun" of
        # "... are sent through Mailgun"; "We stopped using Slack; ..." of "The team chats in Slack".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    dropped = {k for k in new.dropped if k[:1] != "="} - old.retired
    renamed = {k[1:] for k in new.dropped if k[:1] == "="} - old.retired
    named = {k.key for k in old.keys if k.value and not k.joined and _IDENTIFIER.search(k.key)}
    about = a[0] in mine or a[-1] in dropped or bool((named & mine) - dropped)
    if (dropped and dropped <= theirs and about) or (
        renamed and renamed <= theirs and a[-1] in renamed
    ):
        # A clause says what the old text is about, or the value it names, is gone or renamed:
        # "Dependabot is disabled", "the .env file was deleted", "acmectl was renamed to acme".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    gone_names = dropped & {k.key for k in old.keys if k.value}
    if (
        gone_names
        and len(dropped - theirs) <= 1
        and a[0] in mine
        and a[0] not in dropped
        and (new.cues - old.cues) - REMOVALS
    ):
        # The old subject restated with a change, and a clause says a thing the old text names
        # (a word more at most: "the Jenkins job") is gone: "Deploys now run on every merge;
        # the Jenkins job was removed" of "Deploys are triggered from the Jenkins UI"; not "the
        # Algolia docs index was removed" of "the search page uses Algolia".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    valued = {k.key for k in (*old.keys, *new.keys) if k.value}
    joined = {k.key for k in (*old.keys, *new.keys) if k.joined}
    relations = {k.key for k in (*old.keys, *new.keys) if k.relation}
    slots = _slots(a, b, theirs, mine, valued, joined, relations)
    scoped = {k.key for k in (*old.keys, *new.keys) if k.scoped}
    if any(set(gone) & scoped - valued and set(came) & scoped - valued for gone, came in slots):
        return (
            DISTINCT  # what it is for differs: "for the payment webhook" / "for the shipping ..."
        )
    bumped = [slot for slot in slots if _bumped(new, old, a, b, slot)]
    if len(slots) == 2 and bumped:
        # "Next.js 13 with the pages router" -> "upgraded to Next.js 14 with the app router"
        slots = bumped[:1]
    retiring = (new.contrasted - old.retired) & theirs
    if (
        retiring
        and shared - retiring - relations
        and not flipped
        and len(shared) / len(theirs) >= 0.6
    ):
        # The old value named and retired, the subject kept, however the rest was reworded:
        # "migrations are run with make db-migrate now, not alembic directly".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    if len(slots) == 2 and (new.cues - old.cues) and not flipped and _remeasured(new, old):
        # The same subject, the same measure at another figure, the wording around it changed,
        # the change announced: "The coverage floor is 85% now" of "Coverage must stay above 80%".
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    if (
        len(slots) == 2
        and not (flipped or new.clauses)
        and new.cues - old.cues
        and _reworded(new, old, slots)
    ):
        # The change announced, one slot a value for a value, the other only worded anew (no
        # value, not what the statement is for): "We switched error reporting over to Rollbar"
        # of "Error tracking goes through Sentry"; not "... for the data stack is now ..."
        return Verdict("update", _score(a, b, len(shared) / len(theirs)))
    if len(slots) >= 2:
        return DISTINCT  # two slots differ: which one, and what it is
    # Only what the old text did not already say: "pnpm, not npm" restates "pnpm instead of npm".
    retires = bool((new.retired - old.retired) & theirs)
    announced = bool(new.cues - old.cues) or retires or flipped
    # A cue in one clause cannot vouch for another clause's subject ("Retries were removed;
    # src/api/orders.py fails" says nothing of users.py): with several clauses, heads are checked.
    determined = old.words[:1] == new.words[:1] and old.words[0] in DETERMINERS
    if slots and determined and _sibling(a, b, slots[0], valued):
        return DISTINCT  # "the orders table ..." / "the events table is now ...": another one
    if slots and old.headed and not (announced and not new.clauses):
        if a.index(slots[0][0][0]) == 0:
            return DISTINCT  # the subject itself differs: "the web app" / "the admin app"
        if new.headed and a[0] != b[0]:
            return DISTINCT  # another head: "the checkout page uses X" / "the subscription ..."
    wording = relations - shared  # relation verbs only one text has: "shipped to" / "send to"
    if len(shared) / len((mine | theirs) - wording) < 0.3:
        if len(slots) == 1 and announced and not flipped and _restated(new, old):
            # "Standup moved to 10:00" of "The team standup is at 9:30": a short restatement,
            # every word of it the old one's, one value for another, the change announced.
            return Verdict("update", _score(a, b, len(shared) / len(theirs)))
        return UNKNOWN  # too few words in common to align: a paraphrase, or another subject
    coverage = len(shared) / len(theirs)
    if new.headed and b[0] not in theirs and a[0] in mine and not (flipped or retires):
        return DISTINCT  # a narrower subject: "hotfix releases are cut ..." / "releases ..."
    if not slots:
        if new.negated and flipped and added - relations and not (new.cues - old.cues or retires):
            # An exception, not a reversal: "does not cache authenticated GETs"; the other way
            # round ("Caching is enabled ... with a 60 s TTL" of "... is disabled"), a reversal.
            return DISTINCT
        # "every two weeks" -> "every week now": a value dropped, announced as a change
        changed = added or removed & valued
        if (flipped or retires or (changed and announced)) and coverage >= 0.6:
            return Verdict("update", _score(a, b, coverage))
        return DISTINCT  # an elaboration, a subset, or the same words reordered
    gone, came = slots[0]
    if flipped and not (new.cues - old.cues or retires):
        return DISTINCT  # a value changed AND the polarity: "API must not ..." / "CLI may ..."
    cues = new.cues - old.cues
    moved = bool(cues) and cues <= PLACE_CUES and not (retires or flipped)
    if moved and _versioned(gone, came) and not _placed(old, gone[0]):
        return DISTINCT  # a move, but what changed was no place: "runs Node 18" / "moved to"
    if not ((set(gone) & valued and set(came) & valued) or announced):
        return DISTINCT  # no value for a value, no cue: another subject ("lint job" / "one review")
    rest = (mine | theirs) - set(gone) - set(came) - wording
    subject = len(shared) / len(rest) if rest else 0.0
    if subject < max(0.6, min_similarity):
        return DISTINCT
    return Verdict("update", _score(a, b, subject))


def _measured_anew(new: Features, old: Features) -> bool:
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


def _versioned_anew(new: Features, old: Features) -> bool:
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


def _holder_changed(new: Features, old: Features) -> bool:
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


def _names_retired(new: Features, old: Features, theirs: set[str]) -> bool:
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


def _reworded(new: Features, old: Features, slots: list[tuple[list[str], list[str]]]) -> bool:
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


def _sibling(
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


def _remeasured(new: Features, old: Features) -> bool:
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


def _restated(new: Features, old: Features) -> bool:
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


def _reversal(new: Features, old: Features) -> float | None:
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


def _bumped(
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


def _versioned(gone: list[str], came: list[str]) -> bool:
    """The old side holds a number the new side has none of ("Node 18" / "the payments cluster")."""
    return any(DIGIT.search(w) for w in gone) and not any(DIGIT.search(w) for w in came)


def _placed(old: Features, key: str) -> bool:
    """The old text names `key` as a place or a predicate ("lives in X", "is X"), what a move
    can change; not as what the subject runs or uses ("runs Node 18")."""
    return any(k.key == key and k.before in PLACES for k in old.keys)


def _moved(new: Features, came: set[str], removed: set[str]) -> bool:
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


def _slots(
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


def _score(a: list[str], b: list[str], subject: float) -> float:
    order = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    return round(subject * 0.5 + order * 0.5, 4)


def supersedes(new: Features, old: Features, min_similarity: float = 0.5) -> float | None:
    """Subject similarity in 0..1 if `new` replaces a value of `old` (else None)."""
    verdict = judge(new, old, min_similarity)
    return verdict.score if verdict.kind == "update" else None


def values_differ(new: Features, old: Features) -> bool:
    """Each holds a value the other lacks, or one negates what the other states."""
    return bool(new.values - old.terms and old.values - new.terms) or new.negated != old.negated


def may_update_by_meaning(new: Features, old: Features, min_similarity: float = 0.5) -> bool:
    """An update the words cannot confirm but the vectors may: values differ, nothing says distinct."""
    return judge(new, old, min_similarity).kind == "unknown" and values_differ(new, old)


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
