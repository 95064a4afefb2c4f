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

The alignment of the two key sequences is worker/memory/alignment.py; the shapes of an update
beyond one changed slot (a measure or version at another figure, a holder handed on, names
retired, a reversal) are worker/memory/update_patterns.py.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass

from worker.memory import alignment
from worker.memory import update_patterns as pattern
from worker.memory.statement import Features, features
from worker.memory.update_words import DETERMINERS, PLACE_CUES, REMOVALS

# An identifier, path or file name: what a lesson or fact is about ("test_payment_webhook").
_IDENTIFIER = re.compile(r"[_/.]")


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
    reversal = pattern.reversal(new, old)
    if not shared and reversal is None:
        return UNKNOWN
    if a[0] in new.former and not old.marked:
        return DISTINCT  # "the old search page was removed" / "the search page uses Algolia"
    qualifiers = {k.key for k in old.keys if k.qualifier and k.key in removed} | {
        k.key for k in new.keys if k.qualifier and k.key in added
    }
    if qualifiers and not pattern.moved(new, qualifiers & added, removed):
        return DISTINCT  # staging / production, us-east-1 / eu-west-1, suite A / suite B
    if reversal is not None:
        # "Decision reversed: notifications get split out of the monolith" of "Decision: keep
        # the monolith": a reversal said in so many words, of the decision about that subject.
        return Verdict("update", alignment.score(a, b, reversal), reversal=True)
    if pattern.measured_anew(new, old) and not flipped:
        # The old subject's one measure at another figure, the change announced, the words before
        # the figure the old ones and a measure noun at most: "Refresh token lifetime shortened
        # to 24 hours after the audit" of "Refresh tokens are valid for 7 days".
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    if pattern.versioned_anew(new, old) and not flipped:
        # The one version (or time) the old text gives, after the same name, at another figure,
        # the change announced, nothing new before it: "Bumped Go to 1.22 in CI" of "CI builds
        # every service with Go 1.21"; "Lambda runtime updated to nodejs20.x" of "... nodejs16.x".
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    if not flipped and pattern.holder_changed(new, old):
        # The same thing, another holder, the hand-over said: "Sara took over as tech lead for
        # the mobile app" of "Tom is the tech lead for the mobile app".
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    set_aside, instead = new.countered
    said = {k.key for k in old.keys if not k.relation}
    if set_aside and set_aside == said - instead and a[0] in instead and not old.negated:
        # ", never X" where X is just what the old text said in place of the new value: "Store
        # timestamps as UTC in the database, never local time" of "... as local time in ...".
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    if pattern.names_retired(new, old, theirs):
        # Every name the old text gives is retired outright, and the new text says what came
        # instead or that it is no longer used: "Emails go out via Postmark now, not Mailgun" of
        # "... are sent through Mailgun"; "We stopped using Slack; ..." of "The team chats in Slack".
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    dropped = {k for k in new.dropped if k[:1] != "="} - old.retired
    renamed = {k[1:] for k in new.dropped if k[:1] == "="} - old.retired
    named = {k.key for k in old.keys if k.value and not k.joined and _IDENTIFIER.search(k.key)}
    about = a[0] in mine or a[-1] in dropped or bool((named & mine) - dropped)
    if (dropped and dropped <= theirs and about) or (
        renamed and renamed <= theirs and a[-1] in renamed
    ):
        # A clause says what the old text is about, or the value it names, is gone or renamed:
        # "Dependabot is disabled", "the .env file was deleted", "acmectl was renamed to acme".
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
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
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    valued = {k.key for k in (*old.keys, *new.keys) if k.value}
    joined = {k.key for k in (*old.keys, *new.keys) if k.joined}
    relations = {k.key for k in (*old.keys, *new.keys) if k.relation}
    slots = alignment.slots(a, b, theirs, mine, valued, joined, relations)
    scoped = {k.key for k in (*old.keys, *new.keys) if k.scoped}
    if any(set(gone) & scoped - valued and set(came) & scoped - valued for gone, came in slots):
        return (
            DISTINCT  # what it is for differs: "for the payment webhook" / "for the shipping ..."
        )
    bumped = [slot for slot in slots if pattern.bumped(new, old, a, b, slot)]
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
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    if len(slots) == 2 and (new.cues - old.cues) and not flipped and pattern.remeasured(new, old):
        # The same subject, the same measure at another figure, the wording around it changed,
        # the change announced: "The coverage floor is 85% now" of "Coverage must stay above 80%".
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    if (
        len(slots) == 2
        and not (flipped or new.clauses)
        and new.cues - old.cues
        and pattern.reworded(new, old, slots)
    ):
        # The change announced, one slot a value for a value, the other only worded anew (no
        # value, not what the statement is for): "We switched error reporting over to Rollbar"
        # of "Error tracking goes through Sentry"; not "... for the data stack is now ..."
        return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
    if len(slots) >= 2:
        return DISTINCT  # two slots differ: which one, and what it is
    # Only what the old text did not already say: "pnpm, not npm" restates "pnpm instead of npm".
    retires = bool((new.retired - old.retired) & theirs)
    announced = bool(new.cues - old.cues) or retires or flipped
    # A cue in one clause cannot vouch for another clause's subject ("Retries were removed;
    # src/api/orders.py fails" says nothing of users.py): with several clauses, heads are checked.
    determined = old.words[:1] == new.words[:1] and old.words[0] in DETERMINERS
    if slots and determined and pattern.sibling(a, b, slots[0], valued):
        return DISTINCT  # "the orders table ..." / "the events table is now ...": another one
    if slots and old.headed and not (announced and not new.clauses):
        if a.index(slots[0][0][0]) == 0:
            return DISTINCT  # the subject itself differs: "the web app" / "the admin app"
        if new.headed and a[0] != b[0]:
            return DISTINCT  # another head: "the checkout page uses X" / "the subscription ..."
    wording = relations - shared  # relation verbs only one text has: "shipped to" / "send to"
    if len(shared) / len((mine | theirs) - wording) < 0.3:
        if len(slots) == 1 and announced and not flipped and pattern.restated(new, old):
            # "Standup moved to 10:00" of "The team standup is at 9:30": a short restatement,
            # every word of it the old one's, one value for another, the change announced.
            return Verdict("update", alignment.score(a, b, len(shared) / len(theirs)))
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
            return Verdict("update", alignment.score(a, b, coverage))
        return DISTINCT  # an elaboration, a subset, or the same words reordered
    gone, came = slots[0]
    if flipped and not (new.cues - old.cues or retires):
        return DISTINCT  # a value changed AND the polarity: "API must not ..." / "CLI may ..."
    cues = new.cues - old.cues
    moved = bool(cues) and cues <= PLACE_CUES and not (retires or flipped)
    if moved and pattern.versioned(gone, came) and not pattern.placed(old, gone[0]):
        return DISTINCT  # a move, but what changed was no place: "runs Node 18" / "moved to"
    if not ((set(gone) & valued and set(came) & valued) or announced):
        return DISTINCT  # no value for a value, no cue: another subject ("lint job" / "one review")
    rest = (mine | theirs) - set(gone) - set(came) - wording
    subject = len(shared) / len(rest) if rest else 0.0
    if subject < max(0.6, min_similarity):
        return DISTINCT
    return Verdict("update", alignment.score(a, b, subject))


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
