"""worker.retrieval.relevance: the features of a candidate at a prompt, the shipped model, its cut.

The decisions are pinned on cases built from features (what a candidate would measure), not on
cosines one CPU's model computes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from worker.retrieval import cues, relevance
from worker.retrieval.keyword_judgment import Evidence
from worker.retrieval.ranking import Candidate
from worker.retrieval.relevance import FEATURES, PromptView, RelevanceModel

MODEL = relevance.load_model()


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "features": ["cosine", "name"],
        "mean": [0.3, 0.1],
        "scale": [0.1, 0.3],
        "weights": [2.0, 1.0],
        "bias": -1.0,
        "threshold": 0.4,
    }
    doc.update(changes)
    return doc


def _view(best_cosine: float = 0.6, names: list[str] | None = None, prompt: str = "") -> PromptView:
    return PromptView(
        names=names or [],
        best_cosine=best_cosine,
        best_coverage=0.5,
        best_score={True: 1.0, False: 1.0},
        rare_weight=5.0,
        best_strength=2.0,
        team=cues.team(prompt),
        past=cues.past(prompt),
        generic=cues.generic(prompt),
    )


def _item(kind: str, **fields: Any) -> dict[str, Any]:
    item = {"kind": kind, "title": "", "body": "", "files": [], "importance": 3}
    item.update(fields)
    return item


def _probability(
    kind: str,
    cosine: float,
    *,
    coverage: float = 0.0,
    item: dict[str, Any] | None = None,
    view: PromptView | None = None,
    rank: int | None = 0,
    worked: int = 10,
) -> float:
    view = view or _view(best_cosine=max(cosine, 0.2))
    cand = Candidate(
        (kind, 1),
        keyword_rank=rank,
        vector_rank=rank,
        plain_cosine=cosine,
        coverage=coverage,
        score=1.0,
    )
    strength = Evidence(coverage, coverage * view.rare_weight)
    values = relevance.features(
        cand, item or _item(kind, body="x" * 80), None, strength, view, worked
    )
    return MODEL.probability(values)


def test_the_shipped_model_names_only_known_features_and_a_cut_inside_0_1() -> None:
    doc = json.loads(relevance.MODEL_FILE.read_text())
    assert set(doc["features"]) <= set(FEATURES)
    assert 0 < MODEL.threshold < 1
    assert doc["training"]["projects"] >= 24  # fitted on the larger corpus, not the six


def test_a_model_file_with_unknown_features_or_mismatched_lengths_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown features"):
        RelevanceModel.read(_doc(features=["cosine", "vibes"]))
    with pytest.raises(ValueError, match="differ in length"):
        RelevanceModel.read(_doc(weights=[1.0]))
    with pytest.raises(ValueError, match="threshold"):
        RelevanceModel.read(_doc(threshold=1.0))


def test_probability_is_the_logistic_of_standardised_features() -> None:
    model = RelevanceModel.read(_doc())
    z = -1.0 + 2.0 * (0.5 - 0.3) / 0.1 + 1.0 * (1.0 - 0.1) / 0.3
    assert model.probability({"cosine": 0.5, "name": 1.0}) == pytest.approx(1 / (1 + math.exp(-z)))
    # A feature the candidate lacks counts as 0.
    z0 = -1.0 + 2.0 * (0 - 0.3) / 0.1 + 1.0 * (0 - 0.1) / 0.3
    assert model.probability({}) == pytest.approx(1 / (1 + math.exp(-z0)))


def test_strictness_half_is_the_fitted_cut_and_more_strictness_needs_more() -> None:
    model = RelevanceModel.read(_doc())
    assert model.cut(0.5) == pytest.approx(0.4)
    cuts = [model.cut(s / 10) for s in range(11)]
    assert cuts == sorted(cuts) and cuts[0] < 0.4 < cuts[-1]


def test_features_of_a_memory_holding_the_prompts_code_name() -> None:
    view = _view(best_cosine=0.5, names=["billing/views.py"])
    cand = Candidate(("memory", 7), keyword_rank=0, vector_rank=2, plain_cosine=0.3, score=0.5)
    item = _item("memory", body="Never query billing/views.py without the org filter.")
    values = relevance.features(cand, item, 0.45, None, view, 0)
    assert set(values) == set(FEATURES)
    assert values["name"] == 1.0 and values["prompt_names"] == 1.0
    assert values["clause"] == 0.45 and values["memory_cosine"] == 0.45
    assert values["cosine_gap"] == pytest.approx(0.05)
    assert values["keyword_rank"] == 1.0 and values["vector_rank"] == pytest.approx(1 / 3)
    assert values["relative_score"] == 0.5
    assert values["idle_prompt"] == 0.0  # not a prompt


def test_an_earlier_prompt_whose_session_did_nothing_is_marked_idle() -> None:
    cand = Candidate(("prompt", 3), plain_cosine=0.5, score=1.0)
    item = _item("prompt", body="what's the difference between a struct and a class?")
    idle = relevance.features(cand, item, None, None, _view(), 0)
    worked = relevance.features(cand, item, None, None, _view(), 12)
    assert idle["idle_prompt"] == 1.0 and idle["session_work"] == 0.0
    assert worked["idle_prompt"] == 0.0 and worked["session_work"] > 0


def test_a_close_memory_that_names_the_prompts_file_is_given() -> None:
    view = _view(best_cosine=0.62, names=["migrations.kt"])
    item = _item("memory", body="Room schema changes need a Migration (Migrations.kt) first.")
    p = _probability("memory", 0.62, coverage=0.6, item=item, view=view)
    assert p >= MODEL.cut(0.5)


def test_a_distant_routine_item_at_a_prompt_nothing_concerns_is_not_given() -> None:
    view = _view(best_cosine=0.16)
    item = _item("observation", title="Run: git status", body="stdout: nothing to commit")
    p = _probability("observation", 0.12, item=item, view=view, rank=20)
    assert p < MODEL.cut(0.5)


def test_an_idle_earlier_question_is_less_likely_than_one_that_led_to_work() -> None:
    item = _item("prompt", body="how do generics differ from interfaces here?")
    idle = _probability("prompt", 0.45, item=item, worked=0)
    worked = _probability("prompt", 0.45, item=item, worked=15)
    assert idle < worked


def test_the_prompts_wording_is_a_feature_of_every_candidate() -> None:
    cand = Candidate(("observation", 4), plain_cosine=0.4, score=1.0)
    view = relevance.prompt_view([cand], {}, [], None, 0, "Why did we pin the SDK last time?")
    values = relevance.features(cand, _item("observation"), None, None, view, 3)
    assert (values["team_cue"], values["past_cue"], values["generic_cue"]) == (1.0, 1.0, 0.0)


def test_a_general_question_about_the_projects_tool_is_not_handed_its_routine_work() -> None:
    """The same close routine item: given when the prompt asks about the project's own past,
    not when it asks how the tool works in general (the project's files share its words)."""
    item = _item("observation", title="Run: pytest -q", body="stdout: 2 passed")
    own = _view(best_cosine=0.5, prompt="The fixture we added broke the test run again, why?")
    general = _view(best_cosine=0.5, prompt="What's the difference between a fixture and a mock?")
    p_own = _probability("observation", 0.5, coverage=0.5, item=item, view=own)
    p_general = _probability("observation", 0.5, coverage=0.5, item=item, view=general)
    assert p_general < MODEL.cut(0.5) <= p_own


def test_a_question_in_general_form_about_the_projects_own_choice_gets_its_memory() -> None:
    """ "How does the online count work here?" has a general question's form, but a memory
    that answers it closely is still given; a loosely related one is not."""
    prompt = "How does the online count work in the chat rooms?"
    item = _item("memory", body="Online count = number of Presence keys (one per user id).")
    close = _probability("memory", 0.7, coverage=0.8, item=item, view=_view(0.7, prompt=prompt))
    loose = _probability("memory", 0.3, coverage=0.2, item=item, view=_view(0.3, prompt=prompt))
    assert loose < MODEL.cut(0.5) <= close


@pytest.mark.parametrize("kind", ["memory", "observation", "summary", "prompt"])
def test_a_closer_item_is_never_less_likely(kind: str) -> None:
    """As its cosine to the prompt grows (and with it the prompt's best), an item only gains."""
    probabilities = [_probability(kind, c / 20) for c in range(2, 17)]
    assert probabilities == sorted(probabilities)


def test_what_the_items_session_says_beyond_it_is_evidence_only_in_excess() -> None:
    """A decision saved in other words than the prompt is likelier when its session's answer is
    close to the prompt; a hit close on its own gains nothing from its session-mates, and one with
    no session is judged as before."""
    cand = Candidate(("memory", 7), plain_cosine=0.2, coverage=0.0, score=1.0)
    item = _item("memory", body="charts/web-api leaves spec.replicas out so the HPA owns it.")
    view = _view(best_cosine=0.45)

    def values(mates: tuple[float, float], cosine: float = 0.2) -> dict[str, float]:
        cand.plain_cosine = cosine
        return relevance.features(cand, item, None, Evidence(0.0, 0.0), view, 6, mates)

    alone, backed = values((0.0, 0.0)), values((0.45, 0.5))
    assert (alone["thread_cosine"], alone["thread_coverage"]) == (0.0, 0.0)
    assert backed["thread_cosine"] == pytest.approx(0.25) and backed["thread_coverage"] == 0.5
    assert MODEL.probability(alone) < MODEL.cut(0.5) <= MODEL.probability(backed)
    # Close on its own: mates no closer than it add nothing.
    close = values((0.4, 0.0), cosine=0.45)
    assert close["thread_cosine"] == 0.0
    assert MODEL.probability(close) == MODEL.probability(values((0.0, 0.0), cosine=0.45))


def test_the_model_file_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(_doc()))
    first = relevance.load_model(path)
    path.write_text(json.dumps(_doc(bias=5.0)))
    assert relevance.load_model(path) is first


def test_only_an_earlier_prompt_whose_session_did_nothing_holds_only_the_question() -> None:
    item = _item("prompt", body="how do generics differ from interfaces here?")
    cand = Candidate(("prompt", 3), plain_cosine=0.9, score=1.0)
    assert relevance.only_the_question(relevance.features(cand, item, None, None, _view(), 0))
    assert not relevance.only_the_question(relevance.features(cand, item, None, None, _view(), 2))
    memory = Candidate(("memory", 3), plain_cosine=0.9, score=1.0)
    features = relevance.features(memory, _item("memory", body="x"), None, None, _view(), 0)
    assert not relevance.only_the_question(features)  # a memory has no session's work
