"""The checkpoint saved before compaction (and at Stop): where the work stands, to resume the thread.

`build_checkpoint` is pure and deterministic; the context builder puts a stored one first after a
`resume`, `compact` or `clear` SessionStart (`retrieval/context_builder.checkpoint_text`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from worker.memory.activity import (
    clip,
    failing_commands,
    meaningful_prompts,
    message_parts,
    observation_files,
    plan_items,
    unique,
)
from worker.memory.summary import completed_items

# Progress looks at the recent tail of the session: what happened just before compaction matters.
RECENT_OBSERVATIONS = 60
QUESTION_PROMPTS = 3


@dataclass
class CheckpointDraft:
    task: str
    progress: list[str]
    next_steps: list[str]
    open_questions: list[str]
    files: list[str]


def files_in_flight(
    observations: Sequence[Mapping[str, Any]], root: str | None, limit: int
) -> list[str]:
    """Files written most recently first, de-duplicated."""
    seen: dict[str, None] = {}
    for obs in reversed(observations):
        if obs.get("type") == "file_write":
            for path in observation_files(obs, root):
                seen.setdefault(path, None)
    return list(seen)[:limit]


def _questions(text: str) -> list[str]:
    return message_parts(text)["questions"] if "?" in text else []


def build_checkpoint(
    prompts: Sequence[Mapping[str, Any]],
    observations: Sequence[Mapping[str, Any]],
    *,
    plan: Any = None,
    last_assistant_message: str | None = None,
    custom_instructions: str | None = None,
    root: str | None = None,
    max_files: int = 15,
    max_items: int = 10,
    item_chars: int = 300,
) -> CheckpointDraft:
    """Task (latest real prompt), progress, next steps, open questions and files in flight."""
    asked = meaningful_prompts(prompts)
    in_progress = plan_items(plan, "in_progress")
    if asked:
        task = clip(asked[-1], item_chars)
        if len(asked) > 1 and len(asked[-1]) < 40:
            # A short follow-up ("now the tests too") reads better with what it follows.
            task = clip(f"{asked[-2]} — then: {asked[-1]}", item_chars)
    elif in_progress:
        task = clip(in_progress[0], item_chars)
    else:
        task = ""

    recent = observations[-RECENT_OBSERVATIONS:]
    progress = [f"In progress: {item}" for item in in_progress]
    progress += completed_items(recent, plan, root, max_items, item_chars)

    parts = message_parts(last_assistant_message or "")
    next_steps = [f"Continue: {item}" for item in in_progress]
    next_steps += plan_items(plan, "pending")
    next_steps += [
        f"Fix the failing `{clip(cmd, 120)}` (exit {code})"
        for cmd, code in failing_commands(observations)
    ]
    next_steps += parts["next"]
    if custom_instructions and custom_instructions.strip():
        next_steps.append(f"Compaction note: {custom_instructions.strip()}")

    questions: list[str] = []
    for text in asked[-QUESTION_PROMPTS:]:
        questions += _questions(text)
    questions += parts["questions"]

    return CheckpointDraft(
        task=task,
        progress=[clip(s, item_chars) for s in unique(progress)][:max_items],
        next_steps=[clip(s, item_chars) for s in unique(next_steps)][:max_items],
        open_questions=[clip(s, item_chars) for s in unique(questions)][:max_items],
        files=files_in_flight(observations, root, max_files),
    )
