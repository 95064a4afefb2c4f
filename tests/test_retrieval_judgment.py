"""worker.retrieval.judgment: code names a prompt mentions, the keyword-only order of what it keeps."""

from __future__ import annotations

from worker.retrieval import judgment
from worker.retrieval.ranking import Candidate


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
