"""Whether a stored item matters at a prompt: one calibrated model over the item's evidence.

Each candidate the ranking puts near the top gets a few numbers (its features): how close its
own vector is to the prompt, whole text and best clause; what share of the prompt's words it
holds; where each retriever placed it; whether it holds a code name the prompt mentions; what
kind of item it is; and how it compares with the best candidate of the same prompt (a prompt
nothing stored concerns has no candidate that stands out). A logistic regression turns them
into the probability that a careful reader would want the item given; an item is injected when
that probability reaches the model's cut, shifted by the user's strictness.

The weights are a file beside this module (`relevance_model.json`), fitted by
`bench/train_relevance.py` on the coding-memory corpus with leave-one-project-out
cross-validation; which features are in it is that script's decision, not this module's.
Pure functions but the file read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from worker.logistic import Logistic, sigmoid
from worker.retrieval import cues, judgment, ranking
from worker.retrieval.keyword_judgment import Evidence
from worker.retrieval.ranking import Candidate, Ref

MODEL_FILE = Path(__file__).with_name("relevance_model.json")
# How far strictness moves the cut, in log-odds: from 0.5 (the model's own cut) to 1, an item
# needs e^3 ~ 20 times the odds; to 0, a twentieth.
STRICTNESS_LOGIT = 3.0


def _rank_share(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / (1.0 + rank)


@dataclass(frozen=True)
class PromptView:
    """What the features of one prompt's candidates share."""

    names: list[str]
    best_cosine: float
    best_coverage: float
    best_score: Mapping[bool, float]
    # The weight of a word found in one item of the project (its IDF there): what the matched
    # weight of the project's words is measured in, so the figure does not grow with its size.
    rare_weight: float = 1.0
    best_strength: float = 0.0
    # What the prompt's wording says (retrieval/cues.py): the team's own work, a reference back
    # in time, a general question about a tool.
    team: float = 0.0
    past: float = 0.0
    generic: float = 0.0


def prompt_view(
    top: Sequence[Candidate],
    clause: Mapping[Ref, float],
    names: list[str],
    scoped: Mapping[Ref, Evidence] | None = None,
    rows: int = 0,
    prompt: str = "",
) -> PromptView:
    best_score: dict[bool, float] = {}
    for cand in top:
        group = cand.ref[0] == "memory"
        best_score[group] = max(best_score.get(group, cand.score), cand.score)
    cosines = [max(c.plain_cosine or 0.0, clause.get(c.ref, 0.0)) for c in top]
    rare = ranking.idf(1, max(rows, 2))
    strengths = [e.strength / rare for e in (scoped or {}).values()]
    return PromptView(
        names=names,
        best_cosine=max(cosines, default=0.0),
        best_coverage=max((c.coverage or 0.0 for c in top), default=0.0),
        best_score=best_score,
        rare_weight=rare,
        best_strength=max(strengths, default=0.0),
        team=cues.team(prompt),
        past=cues.past(prompt),
        generic=cues.generic(prompt),
    )


def features(
    cand: Candidate,
    item: Mapping[str, Any],
    clause: float | None,
    scoped: Evidence | None,
    view: PromptView,
    session_observations: int = 0,
    thread: tuple[float, float] = (0.0, 0.0),
) -> dict[str, float]:
    """The evidence that one item matters at this prompt, as numbers (see the module doc)."""
    kind = cand.ref[0]
    cosine = cand.plain_cosine or 0.0
    best_clause = max(cosine, clause or 0.0)
    coverage = cand.coverage or 0.0
    memory = 1.0 if kind == "memory" else 0.0
    title = str(item.get("title") or "")
    body = str(item.get("body") or "")
    best = view.best_score.get(kind == "memory") or 0.0
    return {
        "cosine": cosine,
        "clause": best_clause,
        "coverage": coverage,
        "keyword_rank": _rank_share(cand.keyword_rank),
        "vector_rank": _rank_share(cand.vector_rank),
        "name": 1.0 if judgment.shares_name(view.names, item) else 0.0,
        "prompt_names": 1.0 if view.names else 0.0,
        "memory": memory,
        "prompt": 1.0 if kind == "prompt" else 0.0,
        "summary": 1.0 if kind == "summary" else 0.0,
        "failure": 1.0 if kind == "observation" and "(exit " in title else 0.0,
        "bare": 1.0 if kind == "observation" and not body.strip() else 0.0,
        "best_cosine": view.best_cosine,
        "best_coverage": view.best_coverage,
        "cosine_gap": view.best_cosine - best_clause,
        "relative_score": cand.score / best if best > 0 else 0.0,
        "importance": ranking.importance(item),
        "memory_cosine": memory * best_clause,
        "memory_coverage": memory * coverage,
        "length": math.log1p(len(title) + len(body)) / 10.0,
        # The prompt's words weighted by their rarity within this project: a general question
        # meets the project only through its common words ("test", the language's name).
        "project_coverage": scoped.coverage if scoped is not None else 0.0,
        "project_strength": scoped.strength / view.rare_weight if scoped is not None else 0.0,
        "best_project_strength": view.best_strength,
        # What the item's session went on to do: an earlier prompt whose session did nothing
        # (a question answered from general knowledge) holds only the question.
        "session_work": math.log1p(session_observations) / 5.0,
        "idle_prompt": 1.0 if only_the_question_of(kind, session_observations) else 0.0,
        "team_cue": view.team,
        "past_cue": view.past,
        "generic_cue": view.generic,
        # A general question's form with a close match: a question about the project's own
        # choice can be put as a general one ("how does the online count work here?"), so the
        # form weighs differently with the evidence of the item itself.
        "generic_clause": view.generic * best_clause,
        "generic_coverage": view.generic * coverage,
        # What the rest of the item's stretch of work says beyond the item itself: how much
        # closer to the prompt its closest session-mate is, and how much more of the prompt's
        # words its best-covering one holds (retrieval/search.threads). A session's question,
        # the commands it ran, its answer and the memory saved in it are recorded apart, in
        # other words: each is evidence for the others. Only the excess counts, so an item that
        # is close on its own (or has no session) is judged on its own evidence.
        "thread_cosine": max(0.0, thread[0] - best_clause),
        "thread_coverage": max(0.0, thread[1] - coverage),
    }


def only_the_question_of(kind: str, session_observations: int) -> bool:
    """An earlier prompt whose session did no work (see `only_the_question`)."""
    return kind == "prompt" and session_observations == 0


def only_the_question(features: Mapping[str, float]) -> bool:
    """An earlier prompt whose session did no work (no tool call: a question answered from
    general knowledge, or from what the agent was handed) is never given. Its line holds the
    question and nothing to act on; what was answered is the turn's `answer` observation, a
    candidate of its own. In the coding-memory corpus (24 projects, as written and padded to
    3,000 items) none of 1,139 such candidates held a probe's marker, yet a general question
    asked again in other words meets its own earlier asking at a cosine of ~0.8, which the
    model's finite weights let through (bench/learning.py: 75 of 106 unrelated paraphrases were
    handed their first asking). The regression cannot say never (its penalty keeps every weight
    finite), so this is decided before it."""
    return features.get("idle_prompt", 0.0) > 0.0


FEATURES: tuple[str, ...] = tuple(
    features(
        Candidate(("memory", 0)),
        {},
        None,
        None,
        PromptView([], 0.0, 0.0, {}),
    )
)


class RelevanceModel(Logistic):
    """The fitted regression over `FEATURES`, with the user's strictness moving its cut."""

    @classmethod
    def read(cls, doc: Mapping[str, Any]) -> RelevanceModel:
        return cls.from_dict(doc, FEATURES, "relevance model")

    def cut(self, strictness: float) -> float:
        """The probability an item needs: the model's own cut at strictness 0.5, moved by
        `STRICTNESS_LOGIT` log-odds per half unit towards 0 (more given) or 1 (less)."""
        t = min(max(self.threshold, 1e-6), 1 - 1e-6)
        return sigmoid(math.log(t / (1 - t)) + STRICTNESS_LOGIT * 2 * (strictness - 0.5))


@cache
def load_model(path: Path = MODEL_FILE) -> RelevanceModel:
    """The model in `path` (read once per process: the file ships with the package)."""
    return RelevanceModel.read(json.loads(path.read_text(encoding="utf-8")))
