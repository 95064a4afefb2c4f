"""Pure lifecycle functions: importance, tags, retention, supersession, merge rules."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.memory_samples import SAMPLES
from worker.errors import ConfigError
from worker.memory import compress, decay
from worker.memory.decay import DAY_MS, DecayPolicy, retention
from worker.memory.importance import score, signals
from worker.memory.merge import merge_fields
from worker.memory.relations import chain
from worker.memory.statement import features
from worker.memory.supersession import supersedes
from worker.memory.tags import normalise_tags, pick_tags
from worker.settings import load_settings
from worker.store.memories import KINDS

POLICY = DecayPolicy()
kinds = st.sampled_from(KINDS)


# ------------------------------------------------------------------ importance
def test_sample_scores_spread_over_the_scale() -> None:
    assert len(SAMPLES) >= 40
    counts = Counter(score(text, kind) for kind, text in SAMPLES)
    assert set(counts) == {1, 2, 3, 4, 5}, counts
    assert max(counts.values()) <= 0.4 * len(SAMPLES), counts


def test_constraints_values_and_kind_raise_importance() -> None:
    plain = score("run the tests before committing", "note")
    assert score("always run the tests before committing", "note") > plain
    assert score("run the tests before committing", "decision") > plain
    assert score("Trivial", "note") == 1
    detailed = "Critical: never deploy v2.3 before the 2025-06-30 deadline; the Stripe API breaks"
    assert score(detailed, "decision") == 5
    assert signals(detailed, "decision")["deadline"] == 1.0


@given(st.text(max_size=400), kinds)
@settings(max_examples=examples(200), deadline=None)
def test_importance_is_deterministic_and_bounded(text: str, kind: str) -> None:
    first = score(text, kind)
    assert first == score(text, kind)
    assert 1 <= first <= 5


# ------------------------------------------------------------------ tags
def test_tags_pick_keywords_without_stop_words() -> None:
    tags = pick_tags("Use PostgreSQL 15 for the database; the database runs in Docker on the VPS")
    assert set(tags[:2]) == {"database", "postgresql"}
    assert "postgresql" in tags and "docker" in tags
    assert not {"the", "for", "use", "15"} & set(tags)
    assert len(pick_tags(" ".join(f"word{i}x" for i in range(40)))) == 5
    assert pick_tags("the a of and") == []


@given(st.text(max_size=300), st.integers(min_value=0, max_value=8))
@settings(max_examples=examples(150), deadline=None)
def test_tags_are_bounded_unique_and_lowercase(text: str, limit: int) -> None:
    tags = pick_tags(text, limit)
    assert len(tags) <= limit and len(set(tags)) == len(tags)
    assert all(t == t.lower() and t for t in tags)


def test_normalise_tags() -> None:
    assert normalise_tags([" DB ", "db", "Ops  Team", ""], 5) == ["db", "ops team"]
    assert normalise_tags([f"t{i}" for i in range(9)], 3) == ["t0", "t1", "t2"]


# ------------------------------------------------------------------ retention
ages = st.floats(min_value=0, max_value=5000 * DAY_MS, allow_nan=False)
importances = st.integers(min_value=1, max_value=5)
uses = st.integers(min_value=0, max_value=80)


@given(ages, ages, importances, uses)
def test_retention_falls_monotonically_with_time(a: float, b: float, imp: int, n: int) -> None:
    half = POLICY.memory_half_life_days(imp, n)
    early, late = sorted((a, b))
    assert retention(late, half) <= retention(early, half)
    assert 0.0 <= retention(late, half) <= 1.0


@given(importances, uses)
def test_retention_halves_at_the_half_life(imp: int, n: int) -> None:
    half = POLICY.memory_half_life_days(imp, n)
    assert retention(0, half) == 1.0
    assert retention(half * DAY_MS, half) == pytest.approx(0.5)
    assert retention(2 * half * DAY_MS, half) == pytest.approx(0.25)


def test_half_lives_by_importance() -> None:
    assert [POLICY.memory_half_life_days(i) for i in range(1, 6)] == [7, 14, 30, 90, 365]
    assert POLICY.memory_half_life_days(3, 1) == pytest.approx(30 * 1.15)


@given(st.floats(min_value=1, max_value=3000 * DAY_MS), importances, uses)
def test_reinforcement_lengthens_retention(age: float, imp: int, n: int) -> None:
    assert POLICY.memory_half_life_days(imp, n + 1) > POLICY.memory_half_life_days(imp, n) or (
        n + 1 > decay.MAX_REINFORCEMENTS
    )
    more = retention(age, POLICY.memory_half_life_days(imp, n + 1))
    assert more >= retention(age, POLICY.memory_half_life_days(imp, n))


@given(ages, importances, uses)
def test_pinned_never_decays(age: float, imp: int, n: int) -> None:
    assert retention(age, POLICY.memory_half_life_days(imp, n), pinned=True) == 1.0


def test_observations_fade_faster_by_type() -> None:
    command = POLICY.observation_half_life_days("command", 2, 0)
    file_write = POLICY.observation_half_life_days("file_write", 2, 0)
    assert command < file_write < POLICY.memory_half_life_days(3)
    assert POLICY.observation_half_life_days("command", 4, 0) == 4 * command


@given(st.lists(st.tuples(ages, importances, uses), min_size=1, max_size=30))
def test_vectorised_retention_matches_the_scalar_one(rows: list[tuple[float, int, int]]) -> None:
    age = np.array([r[0] for r in rows])
    imp = np.array([r[1] for r in rows])
    n = np.array([r[2] for r in rows])
    halves = decay.memory_half_lives_array(POLICY, imp, n)
    got = decay.retention_array(age, halves)
    want = [retention(a, POLICY.memory_half_life_days(i, k)) for a, i, k in rows]
    assert got == pytest.approx(want, rel=1e-9, abs=1e-300)


def test_policy_from_settings_rejects_bad_values() -> None:
    assert DecayPolicy.from_settings(load_settings({})).memory_half_lives_days == (
        7,
        14,
        30,
        90,
        365,
    )
    for env in (
        {"CAIRN_DECAY_MEMORY_HALF_LIVES_DAYS": "1,2,3"},
        {"CAIRN_DECAY_MEMORY_HALF_LIVES_DAYS": "1,2,x,4,5"},
        {"CAIRN_OBS_CHATTER_TYPES": "command,gossip"},
        {"CAIRN_OBS_HALF_LIFE_DAYS_COMMAND": "0"},
    ):
        with pytest.raises(ConfigError):
            DecayPolicy.from_settings(load_settings(env))


# ------------------------------------------------------------------ supersession
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Use PostgreSQL 15 for the database", "Move to PostgreSQL 16 for the database"),
        ("The API timeout is 30 seconds", "Set the API timeout to 60 seconds"),
        ("Use MySQL for the database", "Use PostgreSQL for the database"),
        ("We deploy on Fridays after the standup", "We do not deploy on Fridays after the standup"),
        ("Pin numpy to 1.26 in requirements.txt", "Pin numpy to 2.1 in requirements.txt"),
        # "Don't" splits at the apostrophe: still a negation
        ("Squash-merge every pull request", "Don't squash-merge pull requests anymore"),
        ("Format code with black", "Format code with ruff instead of black"),
        ("Use REST for the API, not GraphQL", "The API will be GraphQL, not REST"),
        ("Our bucket is in us-east-1", "We migrated our bucket to eu-west-1"),
        # numbers in words, a later clause that adds a fact, relation verbs as wording
        ("Pull requests need two approvals", "Pull requests now need only one approval"),
        ("Pre-commit runs mypy on every commit", "Pre-commit no longer runs mypy; CI runs it"),
        ("Logs are shipped to Papertrail", "We send our logs to Datadog now"),
        ("Start the app with npm run dev", "Start the app with make dev now"),
        # a clause that says the subject, or the value named, is gone or renamed
        ("Dependabot opens PRs for every dependency", "Dependabot is disabled; Renovate runs"),
        ("The CLI is called acmectl", "acmectl was renamed to acme"),
        ("The search page uses Algolia", "The search page was removed"),
        # the subject restated with a change, and the thing the old one named said to be gone
        (
            "Releases are published by hand from the Travis dashboard",
            "Releases now go out on every tag; the Travis pipeline was deleted",
        ),
        # "turned off" / "switched off" negate as "disabled" does
        ("Request logging writes every body to disk", "Request body logging was turned off"),
        # the object of an active "replaced" is retired, as after "instead of"
        (
            "Prettier formats the TypeScript code",
            "Biome replaced Prettier for formatting the TypeScript code",
        ),
        # "local" before a thing (a disk, runners) names no environment
        (
            "Dependencies are cached on local runners",
            "Dependencies are cached on hosted runners now",
        ),
        # the same measure of the same subject at another figure, reworded, announced
        ("Page load must stay under 2 seconds", "Page load budget is 1.5 seconds now"),
        # the subject's one measure at another figure, reworded, a degree verb as the cue
        ("Session cookies last 12 hours", "Session cookie lifetime was reduced to 45 minutes"),
        ("Attachments over 20 MB bounce", "We doubled the attachment cap to 40 MB"),
        # the one version after the same name at another figure, reworded, announced
        (
            "The docs build on Sphinx 6.2",
            "Bumped Sphinx to 7.3 for the docs build after the theme fix",
        ),
        ("Functions deploy with the python3.9 runtime", "Functions runtime updated to python3.12"),
        # one value for another and the words around it reworded, the change announced
        ("Crash reports are collected by Bugsnag", "We moved crash reporting over to Sentry"),
        # another holder of the same thing, the hand-over said
        (
            "Lena is the tech lead for the billing app",
            "Omar took over as tech lead for the billing app",
        ),
        (
            "The search cluster is owned by the Core team",
            "Search cluster ownership moved to the Data team",
        ),
        # "test" in "the load test" is a kind of test, not the test environment
        ("The HTTP worker count is 6", "After the load test we set the HTTP worker count to 12"),
        # ", never X" where X is what the old text said instead
        (
            "Money is stored as floats in Postgres",
            "Money is stored as integer cents in Postgres, never floats",
        ),
        # a purpose clause ("so we ...") set aside, with its negation
        (
            "The sync job polls every 30 seconds",
            "The sync job polls every 5 minutes now so we don't hit the rate limit",
        ),
        # short forms as their long ones ("auth" / "authentication", "deps" / "dependencies")
        ("Deps are vendored with pip-tools", "Dependencies are vendored with uv now"),
        # "since we ditched X": X retired
        (
            "Error pages are served by Fastly",
            "Error pages are served by Cloudflare since we ditched Fastly",
        ),
        # a lower-case tool name retired outright is a name
        ("Env files are loaded with dotenv", "We switched from dotenv to direnv"),
        # a decision reversed "after all"; an image tag bumped, said where it is set
        (
            "Decided to keep cron and not move to Airflow",
            "We're moving the cron jobs to Airflow after all",
        ),
        (
            "The Dockerfile starts from node:18-bullseye",
            "Base image in the Dockerfile bumped to node:20-bullseye",
        ),
        # a version in a "we ..." statement (its first key a verb)
        ("We stay on Vite 4 because a plugin broke", "We're on Vite 5 now, the plugin was fixed"),
        # a negation reversed, with a detail
        (
            "Compression is disabled for the upload API",
            "Compression is enabled for the upload API at level 6",
        ),
        # every name of the old text retired outright, the new one named or the old one unused
        (
            "Invoices are rendered with wkhtmltopdf",
            "Invoices render through WeasyPrint, not wkhtmltopdf",
        ),
        ("The team tracks bugs in Jira", "We stopped using Jira; bugs are GitHub issues now"),
        # "moved off X" retires X as "moved from X to" does
        (
            "Metrics dashboards live in Grafana Cloud",
            "We self-host Grafana now; dashboards moved off Grafana Cloud",
        ),
        # a short restatement: every word the old one's, one value for another, announced
        ("The platform team's weekly retro is at 15:00", "Retro moved to 16:30"),
        ("Nightly backups of the main database run at 02:00", "Backups moved to 03:00"),
        ("Docs are hosted on ReadTheDocs", "Docs moved to GitHub Pages"),  # a name, moved
        # a reversal said in words, of the decision about the subject it names
        (
            "Decision: a monorepo with Nx for all packages",
            "Decision reversed: the packages get their own repos, no monorepo",
        ),
        ("Decision: no ORM, plain SQL", "We scrapped the no-ORM rule; new code uses SQLModel"),
        # the main clause of a long text, its reason or occasion set aside
        (
            "The build timeout is 20 minutes",
            "We raised the build timeout to 45 minutes because the layer cache is cold on new runners",
        ),
        (
            "The worker concurrency is 4",
            "After the memory leak last week, the worker concurrency was lowered to 2",
        ),
        ("API keys rotate every 90 days", "Per the new policy, API keys now rotate every 30 days"),
        ("Merges need one approval", "Starting Monday, merges need two approvals"),
        ("The old search page uses Algolia", "The old search page was removed"),
        ("The env var for the database is DB_URL", "DB_URL was renamed to DATABASE_URL"),
        # a version bump may bring another change with it
        (
            "The site runs Next.js 13 with the pages router",
            "The site was upgraded to Next.js 14 with the app router",
        ),
        # short forms as long ones; a value dropped with a cue; the bump in the second slot
        ("The maximum request body is 1 MB", "Max request body size increased to 5 MB"),
        ("Releases are cut every two weeks", "Releases are cut every week now"),
        ("The mobile team uses Expo SDK 49", "The mobile app was upgraded to Expo SDK 51"),
        ("In dev, the API uses port 3000", "In development, the API now uses port 3001"),
        ("The job timeout is 5 min", "The job timeout is now 10 minutes"),  # "min" is a unit
        # what a lesson is about (an identifier) restated, and its old fix said gone
        (
            "The flaky test_export is fixed by retrying twice",
            "The real fix for test_export was a fixed seed; the retries were removed",
        ),
    ],
)
def test_supersession_detects_changed_values(old: str, new: str) -> None:
    assert supersedes(features(new), features(old)) is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Alice owns the billing service", "Bob owns the auth service"),
        ("Use PostgreSQL 15 for the database", "Use PostgreSQL 15 for the database in tests too"),
        ("Use PostgreSQL 15 for the database", "The frontend uses React 18"),
        ("Run ruff before committing", "Run mypy before committing"),
        ("Tests live in tests/", "Docs live in docs/"),
        ("The staging server runs on port 8080", "The production server runs on port 443"),
        # issue 19: siblings told apart by a number, a letter, a region or an environment
        ("Fact number 1: the API needs a token", "Fact number 2: the API paginates by cursor"),
        ("Test suite A uses pytest-xdist", "Test suite B uses pytest-xdist"),
        ("Test suite A uses pytest", "Test suite B uses unittest"),
        ("The log retention in us-east-1 is 30 days", "The log retention in eu-west-1 is 90 days"),
        ("In staging the cache TTL is 60 seconds", "In production the cache TTL is 300 seconds"),
        ("The web app uses React 18", "The admin app uses React 17"),
        # restating what the old one retired is not a change
        ("Use pnpm instead of npm", "Use pnpm, not npm, for installing packages"),
        # "now" does not move a value to another environment; an exception is not a reversal
        ("Feature flags default to on in development", "Flags now default to off in production"),
        ("The API caches GET responses for 60 s", "The API does not cache authenticated GETs"),
        ("Use snake_case for Python function names", "Use camelCase for TypeScript function names"),
        # a rename leaves what was said of the thing true; a removal with a restriction too
        ("acmectl deploy needs an API token", "acmectl was renamed to acme"),
        ("Dependabot opens PRs for every dependency", "Dependabot is disabled for the docs repo"),
        ("Redis caches sessions for 24 hours", "Redis persistence was disabled"),
        # the removal of a former one leaves the current one ("the old search page was removed")
        ("The search page uses Algolia", "The old search page was removed"),
        ("The admin panel uses Django admin", "The legacy admin panel was deleted"),
        # more than the thing named is gone: another thing of that name
        (
            "Deploys are triggered from the Jenkins UI",
            "Deploys now need two approvals; the Jenkins nightly backup job was removed",
        ),
        # turned off in another environment
        ("The debug toolbar shows in development", "The debug toolbar is turned off in production"),
        # replaced somewhere else
        ("We lint JavaScript with ESLint", "Biome replaced ESLint in the docs repo"),
        # an opening that says which environment the rest is of is not set aside
        ("Merges need one approval", "Starting in production, merges need two approvals"),
        # "local dev" does
        ("The app runs on port 3000 in local dev", "The app runs on port 8080 in staging"),
        # another measure of the subject, or of a part of it
        ("The API timeout is 30 seconds", "The API retry delay is now 5 seconds"),
        ("Coverage must stay above 80%", "Coverage of the billing module is 95% now"),
        # moved off it for another subject
        ("Runbooks live in Notion", "We moved off Notion for design docs"),
        # a short text that names another subject is no restatement
        ("The platform team's weekly retro is at 15:00", "The mobile retro moved to 16:30"),
        ("Secrets are kept in Vault", "Secrets for CI moved to GitHub"),
        # a removal of another thing of that name retires no value ("not X" would)
        (
            "The search page uses Algolia",
            "Search results now refresh on every keystroke; the Algolia docs index was removed",
        ),
        # a reversal of another decision (its subject not named), or of no decision at all
        (
            "Decision: Postgres for the main database",
            "Decision reversed: the analytics database moves off BigQuery",
        ),
        ("The monolith is written in Django", "Decision reversed: the monolith gets split up"),
        # a reason set aside leaves the subject as it was: another one
        (
            "The API rate limit is 100 requests per minute",
            "The search API rate limit is 20 requests per minute because search is expensive",
        ),
        ("The Android app runs React Native 0.72", "The iOS app was upgraded to React Native 0.74"),
        ("The web app uses Redux 4 for state", "The web app was upgraded to React 18 with SWC"),
        # "from" alone is no change; a plain-word slot needs a value on both sides (or a cue)
        ("The docs site is built with Docusaurus", "The docs site is deployed from gh-pages"),
        ("Branch protection requires the lint job", "Branch protection requires one review"),
        # a narrower subject; a move of something that was no place
        ("Releases are cut every two weeks", "Hotfix releases are cut any day now"),
        (
            "The billing service runs Node 18",
            "The billing service was moved to the payments cluster",
        ),
        # another head named by another value: final even when few words are shared
        ("STRIPE_WH_SECRET holds the webhook secret", "STRIPE_API_KEY holds the secret API key"),
        (
            "src/api/users.py retries failed calls twice",
            "Retries were removed; src/api/orders.py fails",
        ),
        # the same measure of another subject, or of a narrower one, changed
        (
            "Payments API calls time out after 30 seconds",
            "The search API timeout was extended to 60 s",
        ),
        (
            "Nightly backups are kept for 30 days",
            "Backups of the audit log are now kept for 1 year",
        ),
        # the same tool's version for another subject, or a narrower one, or by another name
        ("The web container runs Python 3.11", "The ML container was moved to Python 3.12"),
        ("Node 18 runs the lambdas", "Bumped Node to 20 for the web server"),
        (
            "Ansible for the edge hosts is pinned to 8.1",
            "Ansible for the core hosts is now pinned to 9",
        ),
        # a reworded slot that says what the statement is for: another subject
        ("Payments use Stripe for card checkout", "Payments now use Adyen for wallet checkout"),
        # "in test" is the environment
        ("The HTTP worker count is 6 in test", "The HTTP worker count is 12 in production now"),
        # ", never X" of one word of the old value, for a narrower subject
        (
            "Money is stored as integer cents",
            "Money in the ledger export is written as decimals, never cents",
        ),
        # a negation that adds an exception stays distinct; "left X alone" retires nothing
        (
            "Compression is enabled for the upload API",
            "Compression is not enabled for the upload API on images",
        ),
        (
            "The upload timeout is 30 seconds",
            "We left the upload timeout alone and raised the pool to 20",
        ),
        # a lower-case name retired only for one use
        ("Env files are loaded with dotenv", "We switched from dotenv to direnv for the CLI"),
        # the same image family for another image
        (
            "The API image builds from python:3.11-slim",
            "The worker image now builds from python:3.12-slim",
        ),
        # another thing it is for, whatever else changed: final, for the vector path too
        (
            "Retries are turned off for the order webhook",
            "Retries are enabled for the refund webhook, at most 4",
        ),
        # in a "we ..." statement the reworded word may be the subject
        ("We build the docs with Hugo 0.110", "We build the blog with Hugo 0.121 now"),
        # a name retired by a text with a subject of its own, the old subject not named
        ("Docker images are pushed to GHCR", "Helm charts moved from GHCR to ChartMuseum"),
        # a reworded slot with more words than it replaced names a part or another thing
        (
            "The report page refreshes every 10 seconds",
            "The report page's export job now runs every 5 minutes",
        ),
        # a hand-over of another thing
        (
            "Lena is the tech lead for the billing app",
            "Omar took over as tech lead for the admin app",
        ),
        # "US" in capitals is a region, not "us"
        ("The EU export job runs at 02:00 UTC", "The US export job now runs at 05:00 UTC"),
        # a name retired only for one use ("for runbooks"), not outright
        ("Design docs are written in Notion", "We stopped using Notion for runbooks"),
        # one more that holds, said to add: "too", "also", "as well"
        ("Dark mode is enabled for Chrome", "Dark mode is now enabled for Firefox too"),
        ("The linter checks the API package", "The linter also checks the CLI package now"),
        # another one of the same kind at the head, whatever the cue
        ("The users table is sharded by region", "The sessions table is now sharded by hour"),
    ],
)
def test_supersession_leaves_different_subjects_alone(old: str, new: str) -> None:
    assert supersedes(features(new), features(old)) is None


@given(st.text(max_size=200), st.text(max_size=200))
@settings(max_examples=examples(150), deadline=None)
def test_supersession_never_fails_and_identical_text_never_supersedes(a: str, b: str) -> None:
    result = supersedes(features(a), features(b))
    assert result is None or 0.0 <= result <= 1.0
    assert supersedes(features(a), features(a)) is None


def test_chain_is_ordered_and_cycle_safe() -> None:
    newer = {1: 2, 2: 3}
    older = {2: 1, 3: 2}
    assert chain(2, newer, older) == [1, 2, 3]
    assert chain(1, newer, older) == [1, 2, 3]
    assert chain(5, {}, {}) == [5]
    assert sorted(chain(1, {1: 2, 2: 1}, {2: 1, 1: 2})) == [1, 2]


# ------------------------------------------------------------------ merge rules
def test_merge_keeps_the_higher_kind_and_importance_and_unions_tags() -> None:
    existing = {
        "kind": "note",
        "importance": 2,
        "importance_auto": 1,
        "tags": '["db"]',
        "expires_at": 5,
        "updated_at": 100,
        "pinned": 0,
        "hit_count": 3,
        "meta": None,
    }
    incoming = {"kind": "decision", "importance": 4, "tags": ["ops", "db"], "meta": {"a": 1}}
    changes = merge_fields(existing, incoming, now=200, max_tags=5)
    assert changes["kind"] == "decision" and changes["importance"] == 4
    assert changes["importance_auto"] == 0
    assert changes["tags"] == '["db","ops"]'
    assert changes["hit_count"] == 4 and changes["updated_at"] == 200
    assert changes["expires_at"] is None and changes["archived_at"] is None
    assert changes["meta"] == '{"a":1}'
    weaker = merge_fields(
        {**existing, "kind": "decision", "importance": 5},
        {"kind": "note", "importance": 1, "tags": []},
        now=300,
        max_tags=5,
    )
    assert weaker["kind"] == "decision" and weaker["importance"] == 5


# ------------------------------------------------------------------ compression joins
word_sets = st.frozensets(st.sampled_from([f"w{i}" for i in range(12)]), max_size=6)


@given(st.lists(word_sets, max_size=25), st.sampled_from([0.6, 0.8, 1.0]))
@settings(max_examples=examples(150), deadline=None)
def test_lexical_join_matches_brute_force(sets: list[frozenset[str]], threshold: float) -> None:
    docs = dict(enumerate(sets, start=1))
    firsts: dict[frozenset[str], int] = {}
    want: set[tuple[int, int]] = set()
    for doc_id, words in docs.items():
        if not words:
            continue
        if words in firsts:
            want.add((firsts[words], doc_id))
            continue
        firsts[words] = doc_id
    reps = sorted(firsts.items(), key=lambda kv: kv[1])
    for i, (a, ia) in enumerate(reps):
        for b, ib in reps[i + 1 :]:
            shared = len(a & b)
            if (
                shared / len(a | b) >= compress.JACCARD_FLOOR
                and shared / min(len(a), len(b)) >= threshold
            ):
                want.add((ia, ib))
    got = {(a, b) for a, b, _ in compress.lexical_pairs(docs, threshold)}
    assert got == want


@given(st.integers(min_value=2, max_value=40), st.integers(min_value=0, max_value=10**6))
@settings(max_examples=examples(40), deadline=None)
def test_vector_join_matches_brute_force(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, 8)).astype(np.float32)
    matrix[n // 2] = matrix[0] + 0.01  # at least one near-duplicate
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = list(range(100, 100 + n))
    sims = matrix @ matrix.T
    want = {(ids[i], ids[j]) for i in range(n) for j in range(i + 1, n) if sims[i, j] >= 0.88}
    got = {(a, b) for a, b, _ in compress.vector_pairs(ids, matrix, 0.88)}
    assert got == want


def test_additions_keep_only_new_sentences() -> None:
    keeper = "Use pnpm for installs. The lockfile is committed."
    other = "Use pnpm for installs! CI caches the pnpm store by lockfile hash."
    assert compress.additions(keeper, other) == "CI caches the pnpm store by lockfile hash."
    assert compress.additions(keeper, keeper) == ""
