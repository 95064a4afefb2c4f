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
# One thing done: where it first happened in the session (-1: a plan item), and its line.
Done = tuple[int, str]
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


def _file_edits(observations: Sequence[Mapping[str, Any]], root: str | None) -> list[Done]:
    """One line per changed file, at its first change: 'Edited a.py (3 changes)'."""
    counts: dict[str, int] = {}
    verbs: dict[str, str] = {}
    first: dict[str, int] = {}
    for index, obs in enumerate(observations):
        if obs.get("type") != "file_write":
            continue
        verb = _EDIT_VERBS.get(str(obs.get("tool_name") or ""), "Edited")
        for path in observation_files(obs, root):
            counts[path] = counts.get(path, 0) + 1
            verbs.setdefault(path, verb)
            first.setdefault(path, index)
    lines = []
    for path, n in counts.items():
        verb = "Edited" if n > 1 and verbs[path] == "Wrote" else verbs[path]
        lines.append((first[path], f"{verb} {path}" + (f" ({n} changes)" if n > 1 else "")))
    return lines


def _commands_done(
    observations: Sequence[Mapping[str, Any]],
) -> tuple[list[Done], list[Done]]:
    """(significant, other) commands that did not fail, each at its first run, in order."""
    significant: list[Done] = []
    other: list[Done] = []
    seen: set[str] = set()
    for index, obs in enumerate(observations):
        if obs.get("type") != "command":
            continue
        command = command_text(obs)
        ok = command_succeeded(obs)
        if not command or ok is False or is_looking_command(command):
            continue
        line = f"Ran `{clip(command, 120)}`" + (" (succeeded)" if ok else "")
        if line in seen:
            continue
        seen.add(line)
        lowered = command.lower()
        group = significant if any(w in lowered for w in _SIGNIFICANT_COMMAND_WORDS) else other
        group.append((index, line))
    return significant, other


def _other_actions(observations: Sequence[Mapping[str, Any]]) -> list[Done]:
    """Delegations, MCP calls and notes, by their titles ("Delegate to reviewer: ..."); then
    what was looked at (files read, pages fetched): done, not learned."""
    out: list[Done] = []
    seen: set[str] = set()
    for index, obs in enumerate(observations):
        title = str(obs.get("title") or "")
        if obs.get("type") in ("delegation", "mcp", "note") and title and title not in seen:
            seen.add(title)
            out.append((index, title))
    return out


def completed_items(
    observations: Sequence[Mapping[str, Any]],
    plan: Any,
    root: str | None,
    limit: int,
    item_chars: int = 300,
) -> list[str]:
    """Up to `limit` things done, in the order they happened (completed plan items first):
    builds/tests, edits, other actions, what was looked at.

    Each group gets a fair share first so a session of 40 edits still shows its passing tests;
    edits beyond their share collapse into one "... and N more files edited" line at the end.
    """
    plan_done = [(-1, item) for item in unique(plan_items(plan, "completed"))]
    significant, other_commands = _commands_done(observations)
    edits = _file_edits(observations, root)
    actions = _other_actions(observations)
    looked = _looked_at(observations, root)
    groups: list[tuple[list[Done], int]] = [
        (plan_done, 5),
        (significant, 3),
        (edits, 4),
        (actions, 2),
        (other_commands, 2),
        (looked, 1),
    ]
    chosen: list[list[Done]] = [items[:share] for items, share in groups]
    room = limit - sum(len(c) for c in chosen)
    for index, (items, share) in enumerate(groups):
        if room <= 0:
            break
        extra = items[share : share + room]
        chosen[index].extend(extra)
        room -= len(extra)
    edit_index = 2
    hidden_edits = len(edits) - len(chosen[edit_index])
    if hidden_edits > 0 and chosen[edit_index] and sum(map(len, chosen)) >= limit:
        chosen[edit_index].pop()  # room for the "... more files edited" line
        hidden_edits += 1
    ordered = sorted((item for group in chosen for item in group), key=lambda done: done[0])
    out = [clip(text, item_chars) for _, text in ordered][:limit]
    if hidden_edits > 0 and chosen[edit_index]:
        out.append(f"… and {hidden_edits} more file{'s' if hidden_edits > 1 else ''} edited")
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


def _looked_at(observations: Sequence[Mapping[str, Any]], root: str | None) -> list[Done]:
    """What was looked at: one 'Explored a.py, b.py' line at the first file read, then the web
    searches and fetches by title ('Looked up: WebSearch: sqlite wal'). Activity, not knowledge:
    it is no fact worth keeping, so it never goes under Learned."""
    first = -1
    for index, obs in enumerate(observations):
        if obs.get("type") == "research" and observation_files(obs, root):
            first = index
            break
    explored = unique(
        path
        for obs in observations
        if obs.get("type") == "research"
        for path in observation_files(obs, root)
    )
    out: list[Done] = []
    if explored:
        shown = ", ".join(explored[:5])
        more = len(explored) - 5
        out.append((first, f"Explored {shown}" + (f" (+{more} more)" if more > 0 else "")))
    seen: set[str] = set()
    for index, obs in enumerate(observations):
        title = obs.get("title")
        if obs.get("type") == "web" and title and f"Looked up: {title}" not in seen:
            seen.add(f"Looked up: {title}")
            out.append((index, f"Looked up: {title}"))
    return out


def unfixed_failures(observations: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """Commands whose latest run failed (failing_commands) and after which no file was changed:
    a failure the session went on to edit code for is not left as a next step on its own word
    (the agent's own "Next:" says what remains)."""
    last_run: dict[str, int] = {}
    last_write = -1
    for index, obs in enumerate(observations):
        if obs.get("type") == "command":
            last_run[command_text(obs)] = index
        elif obs.get("type") == "file_write":
            last_write = index
    return [
        (cmd, code)
        for cmd, code in failing_commands(observations)
        if last_run.get(cmd, -1) > last_write
    ]


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

    next_steps = [f"Continue: {item}" for item in plan_items(plan, "in_progress")]
    next_steps += plan_items(plan, "pending")
    next_steps += [
        f"Fix the failing `{clip(cmd, 120)}` (exit {code})"
        for cmd, code in unfixed_failures(observations)
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
