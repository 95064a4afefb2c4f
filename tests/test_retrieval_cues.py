"""worker.retrieval.cues: the word classes of a prompt that the relevance model weighs."""

from __future__ import annotations

import pytest

from worker.retrieval import cues


@pytest.mark.parametrize(
    "prompt",
    [
        "Why did we pin the client to 2.x?",
        "our deploy script keeps timing out",
        "Let's add the export endpoint",
        "We\u2019ve got the flaky test back",  # a typographic apostrophe
    ],
)
def test_team(prompt: str) -> None:
    assert cues.team(prompt) == 1.0


@pytest.mark.parametrize(
    "prompt",
    ["Use the wrapper for this", "Is the usual setup fine?", "Add a cache to the view"],
)
def test_not_team(prompt: str) -> None:
    # "us" inside "usual", "we" inside "view": whole words only.
    assert cues.team(prompt) == 0.0


@pytest.mark.parametrize(
    "prompt",
    [
        "The nightly build is red again",
        "What was the fix last time?",
        "The import didn't finish",
        "Remind me where the signing key lives",
    ],
)
def test_past(prompt: str) -> None:
    assert cues.past(prompt) == 1.0


def test_not_past() -> None:
    assert cues.past("Add a retry to the uploader and run the tests") == 0.0


@pytest.mark.parametrize(
    "prompt",
    [
        "What's the difference between a mutex and a semaphore?",
        "How does garbage collection work in Go?",
        "When should I use a dataclass instead of a dict?",
        "Explain Python's GIL",
        "tabs vs spaces in YAML",
        # "differ" as an adjective: the same question
        "how are class components different from function components in React?",
        "Is a tuple really different than a list in Python?",
    ],
)
def test_generic(prompt: str) -> None:
    assert cues.generic(prompt) == 1.0


@pytest.mark.parametrize(
    "prompt",
    [
        "How do I start the service on my laptop?",
        "Fix the failing checkout test",
        "",
        "Wie startet man den Dienst?",  # another language: no cue either way
    ],
)
def test_not_generic(prompt: str) -> None:
    assert cues.generic(prompt) == 0.0
