"""worker.retrieval.judgment: code names a prompt mentions, first in both retrievers."""

from __future__ import annotations

from worker.retrieval import judgment
from worker.retrieval.ranking import Candidate
from worker.settings import Settings

S = Settings()


def test_code_names_are_files_symbols_and_settings() -> None:
    prompt = (
        "What did we change in billing/views.py? Can I use std::sync::LazyLock or call "
        ".unwrap() in useWishlist, with TRAILMATE_KEYSTORE and --since (github.com/pkg/errors)?"
    )
    assert judgment.code_names(prompt) == [
        "billing/views.py",
        "std::sync::lazylock",
        "unwrap",
        "usewishlist",
        "trailmate_keystore",
        "--since",
        "github.com/pkg/errors",
    ]


def test_plain_words_versions_and_short_names_are_not_code_names() -> None:
    assert judgment.code_names("How do I merge two dictionaries in Python 3.9+?") == []
    assert judgment.code_names("Explain the difference between TCP and UDP, e.g. for DNS.") == []
    assert judgment.code_names("Is i/o slow? Use a.b") == []


def test_an_item_shares_a_name_in_its_title_body_or_files() -> None:
    item = {"title": "Edit", "body": "x", "files": ["/repo/billing/views.py"]}
    assert judgment.shares_name(["billing/views.py"], item)
    assert judgment.shares_name(["lazylock"], {"title": "", "body": "use LazyLock::new"})
    assert not judgment.shares_name(["billing/models.py"], item)
    assert not judgment.shares_name([], item)


def test_first_in_both_needs_both_lists_within_the_depth() -> None:
    assert judgment.agreed(0, 2, 3)
    assert not judgment.agreed(0, 3, 3)
    assert not judgment.agreed(None, 0, 3)
    assert not judgment.agreed(0, 0, 0)  # depth 0: the rule is off


def test_more_evidence_from_a_shared_name_needs_a_weak_cosine_at_least() -> None:
    item = {"kind": "observation", "title": "Edit src/filter.rs", "body": "", "files": []}
    names = judgment.code_names("what did we change in src/filter.rs?")
    weak = Candidate(("observation", 1), plain_cosine=S.judgment.prompt_name_min_cosine + 0.01)
    far = Candidate(("observation", 1), plain_cosine=S.judgment.prompt_name_min_cosine - 0.01)
    assert judgment.more_evidence(weak, item, names, S)
    assert not judgment.more_evidence(far, item, names, S)
    assert not judgment.more_evidence(weak, item, [], S)
    # Without a vector (keyword-only), the name alone.
    assert judgment.more_evidence(Candidate(("observation", 1)), item, names, S)


def test_more_evidence_from_agreement_needs_a_weak_cosine_at_least() -> None:
    item = {"kind": "memory", "title": "", "body": "no Tailwind"}
    floor = S.judgment.prompt_agree_min_cosine
    both = Candidate(("memory", 1), keyword_rank=0, vector_rank=1, plain_cosine=floor + 0.01)
    far = Candidate(("memory", 1), keyword_rank=0, vector_rank=1, plain_cosine=floor - 0.01)
    assert judgment.more_evidence(both, item, [], S.with_flat(prompt_agree_depth=3))
    assert not judgment.more_evidence(both, item, [], S.with_flat(prompt_agree_depth=0))
    assert not judgment.more_evidence(far, item, [], S.with_flat(prompt_agree_depth=3))
    # Without a vector (keyword-only), the ranks alone.
    ranks_only = Candidate(("memory", 1), keyword_rank=0, vector_rank=1)
    assert judgment.more_evidence(ranks_only, item, [], S.with_flat(prompt_agree_depth=3))


def _cand(kind: str, item_id: int, score: float) -> Candidate:
    return Candidate((kind, item_id), score=score)


def test_relative_floor_is_within_each_group() -> None:
    kept = [
        _cand("observation", 1, 1.2),
        _cand("summary", 2, 1.0),
        _cand("memory", 3, 0.8),  # the best memory: kept though far below the observation
        _cand("observation", 4, 0.7),  # under 0.7 x 1.2
        _cand("memory", 5, 0.5),  # under 0.7 x 0.8
    ]
    assert [c.ref[1] for c in judgment.within_floor(kept, 0.7)] == [1, 2, 3]
    assert [c.ref[1] for c in judgment.within_floor(kept, 0.0)] == [1, 2, 3, 4, 5]
    assert judgment.within_floor([], 0.7) == []


def test_the_best_memory_goes_first_and_the_rest_keep_their_order() -> None:
    kept = [
        _cand("observation", 1, 1.2),
        _cand("summary", 2, 1.0),
        _cand("memory", 3, 0.8),
        _cand("observation", 4, 0.75),
        _cand("memory", 5, 0.6),
    ]
    assert [c.ref[1] for c in judgment.best_memory_first(kept)] == [3, 1, 2, 4, 5]
    activity = [_cand("observation", 1, 1.2), _cand("prompt", 2, 1.0)]
    assert judgment.best_memory_first(activity) == activity
    assert judgment.best_memory_first([]) == []


def test_a_title_only_observation_needs_the_prompt_to_name_its_file() -> None:
    read = {"kind": "observation", "title": "Read src/cli.rs", "body": "", "files": ["src/cli.rs"]}
    assert judgment.title_only(read, judgment.code_names("is .unwrap() ok when opening a file?"))
    assert not judgment.title_only(read, judgment.code_names("what changed in src/cli.rs?"))
    edit = {**read, "title": "Edit src/cli.rs", "body": "old: a new: b"}
    assert not judgment.title_only(edit, [])
    memory = {"kind": "memory", "title": "", "body": ""}
    assert not judgment.title_only(memory, [])


def test_kept_activity_brings_the_memories_that_name_its_files() -> None:
    edit = _cand("observation", 1, 1.2)
    rule = _cand("memory", 2, 0.6)
    rule.plain_cosine = 0.25  # far from the prompt's words as a whole
    unrelated = _cand("memory", 3, 0.5)
    unrelated.plain_cosine = 0.4
    distant = _cand("memory", 4, 0.4)
    distant.plain_cosine = 0.05  # names the file, but about something else entirely
    items = {
        edit.ref: {
            "kind": "observation",
            "title": "Write app/src/main/java/com/trailmate/data/Migrations.kt (5 lines)",
            "files": ["app/src/main/java/com/trailmate/data/Migrations.kt"],
        },
        rule.ref: {
            "kind": "memory",
            "body": "Room schema changes need a Migration (Migrations.kt)",
        },
        unrelated.ref: {"kind": "memory", "body": "Annotation processing uses KSP, never kapt"},
        distant.ref: {"kind": "memory", "body": "Migrations.kt is formatted by ktlint"},
    }
    top = [edit, rule, unrelated, distant]
    assert judgment.file_names([edit], items) == ["migrations.kt"]
    assert judgment.about_kept_files(top, [edit], items, S) == [rule]
    # Nothing kept (a prompt nothing stored concerns): nothing to follow, silence stays.
    assert judgment.about_kept_files(top, [], items, S) == []
    # A kept memory's own text brings nothing: only activity's files are followed.
    assert judgment.about_kept_files(top, [unrelated], items, S) == []


def test_file_names_skip_folders_short_names_and_extensionless_paths() -> None:
    obs = _cand("observation", 1, 1.0)
    items = {
        obs.ref: {"files": ["src/a.py", "Makefile", "docs/", "web\\src\\App.tsx", "README.md"]}
    }
    assert judgment.file_names([obs], items) == ["app.tsx", "readme.md"]
