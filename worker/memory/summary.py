"""The end-of-session summary, built without an LLM from a session's prompts, observations and plan.

`build_summary` is pure and deterministic: same rows in, same summary out (the context builder,
`retrieval/context_builder.summary_text`, writes a stored one as Markdown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from worker.memory.activity import (
    clip,
    command_succeeded,
    command_text,
    failing_commands,
    is_looking_command,
    meaningful_prompts,
    message_parts,
    observation_files,
    plan_items,
    unique,
)

REQUEST_PROMPTS = 3
_EDIT_VERBS = {"Write": "Wrote", "NotebookEdit": "Edited notebook"}
_SIGNIFICANT_COMMAND_WORDS = (
    "test",
    "pytest",
    "build",
    "make",
    "install",
    "deploy",
    "migrate",
    "commit",
    "push",
    "release",
    "publish",
    "lint",
    "ruff",
    "mypy",
    "tsc",
    "cargo",
    "compile",
)


@dataclass(frozen=True)
class SummaryLimits:
    completed: int = 10
    files: int = 20
    learned: int = 8
    next_steps: int = 8
    item_chars: int = 300


@dataclass
class SummaryDraft:
    request: str
    completed: list[str]
    files: list[str]
    learned: list[str]
    next_steps: list[str]
    # Learned items that are worth keeping as `fact` memories (not the "explored ..." line).
    facts: list[str] = field(default_factory=list)


def _file_edits(observations: Sequence[Mapping[str, Any]], root: str | None) -> list[str]:
    """One line per changed file, in order of first change: 'Edited a.py (3 changes)'."""
    counts: dict[str, int] = {}
    verbs: dict[str, str] = {}
    for obs in observations:
        if obs.get("type") != "file_write":
            continue
        verb = _EDIT_VERBS.get(str(obs.get("tool_name") or ""), "Edited")
        for path in observation_files(obs, root):
            counts[path] = counts.get(path, 0) + 1
            verbs.setdefault(path, verb)
    lines = []
    for path, n in counts.items():
        verb = "Edited" if n > 1 and verbs[path] == "Wrote" else verbs[path]
        lines.append(f"{verb} {path}" + (f" ({n} changes)" if n > 1 else ""))
    return lines


def _commands_done(observations: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(significant, other) commands that did not fail, de-duplicated, in order."""
    significant: list[str] = []
    other: list[str] = []
    for obs in observations:
        if obs.get("type") != "command":
            continue
        command = command_text(obs)
        ok = command_succeeded(obs)
        if not command or ok is False or is_looking_command(command):
            continue
        line = f"Ran `{clip(command, 120)}`" + (" (succeeded)" if ok else "")
        lowered = command.lower()
        if any(word in lowered for word in _SIGNIFICANT_COMMAND_WORDS):
            significant.append(line)
        else:
            other.append(line)
    return unique(significant), unique(other)


def _other_actions(observations: Sequence[Mapping[str, Any]]) -> list[str]:
    """Delegations, MCP calls and notes, by their titles ("Delegate to reviewer: ...")."""
    return unique(
        str(obs.get("title") or "")
        for obs in observations
        if obs.get("type") in ("delegation", "mcp", "note")
    )


def completed_items(
    observations: Sequence[Mapping[str, Any]],
    plan: Any,
    root: str | None,
    limit: int,
    item_chars: int = 300,
) -> list[str]:
    """Up to `limit` things done: plan items completed, then builds/tests, edits, other actions.

    Each group gets a fair share first so a session of 40 edits still shows its passing tests;
    edits beyond their share collapse into one "... and N more files edited" line.
    """
    plan_done = unique(plan_items(plan, "completed"))
    significant, other_commands = _commands_done(observations)
    edits = _file_edits(observations, root)
    actions = _other_actions(observations)
    groups: list[tuple[list[str], int]] = [
        (plan_done, 5),
        (significant, 3),
        (edits, 4),
        (actions, 2),
        (other_commands, 2),
    ]
    chosen: list[list[str]] = [items[:share] for items, share in groups]
    room = limit - sum(len(c) for c in chosen)
    for index, (items, share) in enumerate(groups):
        if room <= 0:
            break
        extra = items[share : share + room]
        chosen[index].extend(extra)
        room -= len(extra)
    edit_index = 2
    hidden_edits = len(edits) - len(chosen[edit_index])
    out = [clip(item, item_chars) for group in chosen for item in group][:limit]
    if hidden_edits > 0 and chosen[edit_index]:
        line = f"… and {hidden_edits} more file{'s' if hidden_edits > 1 else ''} edited"
        if len(out) >= limit:
            out[-1] = line
        else:
            out.append(line)
    return out


def changed_files(
    observations: Sequence[Mapping[str, Any]], root: str | None, limit: int
) -> list[str]:
    """Files written in the session, de-duplicated, in order of first change."""
    seen: dict[str, None] = {}
    for obs in observations:
        if obs.get("type") == "file_write":
            for path in observation_files(obs, root):
                seen.setdefault(path, None)
    return list(seen)[:limit]


def _explored_line(observations: Sequence[Mapping[str, Any]], root: str | None) -> str | None:
    explored = unique(
        path
        for obs in observations
        if obs.get("type") == "research"
        for path in observation_files(obs, root)
    )
    if not explored:
        return None
    shown = ", ".join(explored[:5])
    more = len(explored) - 5
    return f"Explored {shown}" + (f" (+{more} more)" if more > 0 else "")


def _looked_up(observations: Sequence[Mapping[str, Any]]) -> list[str]:
    """Web searches and fetches, by title: what was looked into (not itself a fact)."""
    return unique(
        f"Looked up: {obs.get('title')}"
        for obs in observations
        if obs.get("type") == "web" and obs.get("title")
    )


def build_summary(
    prompts: Sequence[Mapping[str, Any]],
    observations: Sequence[Mapping[str, Any]],
    *,
    plan: Any = None,
    last_assistant_message: str | None = None,
    root: str | None = None,
    limits: SummaryLimits = SummaryLimits(),
) -> SummaryDraft:
    """The summary of one session. Observations and prompts in chronological order."""
    chars = limits.item_chars
    asked = meaningful_prompts(prompts) or [str(p.get("text") or "") for p in prompts]
    request = "\n".join(clip(text, chars) for text in asked[:REQUEST_PROMPTS] if text.strip())
    if not request:
        request = "; ".join(plan_items(plan, "completed", "in_progress", "pending")[:3])

    parts = message_parts(last_assistant_message or "")
    # Only statements from the agent's own conclusion become facts; what was looked at and looked
    # up is context for the summary, not knowledge worth keeping as a memory.
    facts = unique([clip(s, chars) for s in parts["learned"]])
    learned = list(facts)
    learned += [clip(item, chars) for item in _looked_up(observations)[:3]]
    explored = _explored_line(observations, root)
    if explored:
        learned.append(clip(explored, chars))

    next_steps = [f"Continue: {item}" for item in plan_items(plan, "in_progress")]
    next_steps += plan_items(plan, "pending")
    next_steps += [
        f"Fix the failing `{clip(cmd, 120)}` (exit {code})"
        for cmd, code in failing_commands(observations)
    ]
    next_steps += parts["next"] + parts["questions"]

    return SummaryDraft(
        request=request,
        completed=completed_items(observations, plan, root, limits.completed, chars)
        # A session without tool work (a question answered, a review) reports what the agent
        # said it did.
        or [clip(item, chars) for item in parts["done"]][: limits.completed],
        files=changed_files(observations, root, limits.files),
        learned=learned[: limits.learned],
        next_steps=[clip(s, chars) for s in unique(next_steps)][: limits.next_steps],
        facts=facts[: limits.learned],
    )
