"""merge.save on a real store, SQLite and PostgreSQL (`backend_store`, conftest): write-time
merge and both supersession paths."""

from __future__ import annotations

from typing import Any

import pytest

from worker.memory.merge import save
from worker.settings import Settings
from worker.store import Store
from worker.store.pg import PgStore


@pytest.fixture
def store(backend_store: Store | PgStore) -> Store | PgStore:
    return backend_store


P = "/repo/sup"


def put(store: Store, settings: Settings, content: str, **extra: Any) -> Any:
    item = {"kind": "fact", "content": content, "project": P, **extra}
    similar = extra.pop("similar", None)
    item.pop("similar", None)
    return store.write_sync(lambda c: save(c, item, settings, similar))


def test_paraphrase_needs_the_vector_path(store: Store, settings: Settings) -> None:
    old = put(store, settings, "Our database is PostgreSQL 15").row
    # Too few shared words for the lexical check alone.
    plain = put(store, settings, "We upgraded the DB to Postgres 16")
    assert plain.superseded == []
    close = put(store, settings, "The DB was upgraded to Postgres 17", similar={old["id"]: 0.71})
    # The vector finds the paraphrased original; the lexical check finds the close wording.
    assert sorted(close.superseded) == [old["id"], plain.row["id"]]


def test_vector_path_still_needs_different_values(store: Store, settings: Settings) -> None:
    old = put(store, settings, "Our database is PostgreSQL 15").row
    same_values = put(
        store, settings, "PostgreSQL 15 is what our database runs", similar={old["id"]: 0.95}
    )
    assert same_values.superseded == []
    far = put(store, settings, "The cache is Redis 7", similar={old["id"]: 0.4})
    assert far.superseded == []


def test_only_live_latest_memories_of_the_same_scope_are_candidates(
    store: Store, settings: Settings
) -> None:
    other_project = store.write_sync(
        lambda c: save(
            c,
            {"kind": "fact", "content": "Use PostgreSQL 15 for the database", "project": "/x"},
            settings,
        )
    ).row
    new = put(
        store, settings, "Use PostgreSQL 16 for the database", similar={other_project["id"]: 0.99}
    )
    assert new.superseded == []
    note = put(store, settings, "Use PostgreSQL 14 for the database", kind="note")
    assert note.superseded == []  # notes never supersede


def test_disabled_by_setting(settings: Settings, store: Store) -> None:
    off = settings.with_flat(supersede_enabled=False)
    put(store, off, "Use PostgreSQL 15 for the database")
    assert put(store, off, "Move to PostgreSQL 16 for the database").superseded == []


def test_an_import_never_revives_a_superseded_memory(store: Store, settings: Settings) -> None:
    old = put(store, settings, "Use PostgreSQL 15 for the database").row
    new = put(store, settings, "Move to PostgreSQL 16 for the database")
    assert new.superseded == [old["id"]]
    again = put(
        store, settings, "Use PostgreSQL 15 for the database", created_at_ms=1_600_000_000_000
    )
    assert again.merged and again.row["id"] == old["id"]
    assert again.row["superseded_by"] == new.row["id"]  # still replaced
    live = put(store, settings, "Use PostgreSQL 15 for the database")
    assert live.row["superseded_by"] is None  # a live re-statement does make it current


def test_dated_imports_create_no_supersession_chain(store: Store, settings: Settings) -> None:
    day = 86_400_000
    first = put(store, settings, "Use PostgreSQL 14 for the database", created_at_ms=day)
    second = put(store, settings, "Use PostgreSQL 15 for the database", created_at_ms=2 * day)
    third = put(store, settings, "Move to PostgreSQL 16 for the database", created_at_ms=3 * day)
    assert first.superseded == second.superseded == third.superseded == []
    for saved in (first, second, third):
        assert saved.row["superseded_by"] is None


def test_another_head_is_final_for_the_vector_path(store: Store, settings: Settings) -> None:
    """Two settings named by different variables share few words; their vectors are close, but
    the head subject differs without a change cue: distinct, whatever the cosine."""
    old = put(store, settings, "STRIPE_WH_SECRET holds the webhook secret").row
    new = put(store, settings, "STRIPE_API_KEY holds the secret API key", similar={old["id"]: 0.8})
    assert new.superseded == []


def test_a_reversal_said_in_words_replaces_one_decision(store: Store, settings: Settings) -> None:
    """ "Decision reversed: ..." names one decision: of two about its subject, the closer goes;
    a memory saved as a decision counts as one even when its words do not say so."""
    monolith = put(store, settings, "Keep the monolith; no microservices", kind="decision").row
    deploy = put(store, settings, "Decision: the monolith deploys to one VM").row
    fact = put(store, settings, "The monolith is written in Django").row
    reversed_ = put(
        store,
        settings,
        "Decision reversed: notifications get split out of the monolith into microservices",
        kind="decision",
    )
    assert reversed_.superseded == [monolith["id"]]
    assert fact["id"] not in reversed_.superseded and deploy["id"] not in reversed_.superseded


def test_a_hand_over_to_another_holder_updates(store: Store, settings: Settings) -> None:
    """No value and no cue word in 'Mei took over ...' (a name that opens a sentence is no value):
    the hand-over alone makes it a candidate, and only of the same thing."""
    desktop = put(store, settings, "Ivo owns the desktop release process.").row
    mobile = put(store, settings, "Ivo owns the mobile release process.").row
    new = put(store, settings, "Mei took over the desktop release process.")
    assert new.superseded == [desktop["id"]]
    assert mobile["id"] not in new.superseded


def test_a_holder_dated_anew_updates(store: Store, settings: Settings) -> None:
    """'since ...' says when the new holder's state began: with a word of ownership, a change,
    even with no value or cue word to make the save a candidate otherwise."""
    old = put(store, settings, "Joao owns the release checklist.").row
    other = put(store, settings, "Joao owns the incident checklist.").row
    new = put(store, settings, "Mira owns the release checklist since the offsite.")
    assert new.superseded == [old["id"]]
    assert other["id"] not in new.superseded
