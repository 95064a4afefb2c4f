"""The MCP tools' answers as text for the model: index lines `#id time TYPE title` that
`get_observations` expands, observations, memories and sessions in a few readable lines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _short_time(iso: str | None) -> str:
    return (iso or "")[:16].replace("T", " ")


def _one_line(text: str | None, limit: int = 160) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def index_line(item: Mapping[str, Any]) -> str:
    kind = item.get("kind", "observation")
    label = str(item.get("type") or kind).upper()
    prefix = "#" if kind == "observation" else f"{kind}:"
    return f"{prefix}{item.get('id')} {_short_time(item.get('created_at'))} {label} {_one_line(item.get('title'), 120)}"


def format_hits(data: Mapping[str, Any]) -> str:
    hits = data.get("hits") or []
    if not hits:
        return "No relevant memory found" + (
            " (nothing passed the relevance bar)." if data.get("refused") else "."
        )
    lines = []
    for hit in hits:
        line = index_line(hit)
        snippet = _one_line(hit.get("snippet"), 200)
        if snippet:
            line += f"\n    {snippet}"
        lines.append(line)
    lines.append("Details: get_observations(ids=[...]) for #ids; memory:ID lines are memories.")
    return "\n".join(lines)


def format_observation(obs: Mapping[str, Any]) -> str:
    head = f"#{obs['id']} {obs.get('type', '').upper()} {obs.get('title', '')}"
    lines = [
        head,
        f"  when: {obs.get('created_at')}  project: {obs.get('project')}  "
        f"session: {obs.get('session_id') or '-'}",
    ]
    if obs.get("tool_name"):
        lines.append(f"  tool: {obs['tool_name']}")
    if obs.get("files"):
        lines.append("  files: " + ", ".join(str(f) for f in obs["files"]))
    if obs.get("archived"):
        lines.append("  (archived)")
    if obs.get("body"):
        lines.append("")
        lines.append(str(obs["body"]))
    return "\n".join(lines)


def format_memory(memory: Mapping[str, Any]) -> str:
    scope = memory.get("project") or "global"
    flags = [f"importance {memory.get('importance')}"] if memory.get("importance") else []
    if memory.get("pinned"):
        flags.append("pinned")
    if memory.get("tags"):
        flags.append("tags " + ", ".join(str(t) for t in memory["tags"]))
    return (
        f"memory:{memory.get('id')} [{memory.get('kind')}] ({scope}; {'; '.join(flags) or '-'})\n"
        f"{memory.get('content', '')}"
    )


def format_session(session: Mapping[str, Any]) -> str:
    lines = [
        f"Session {session['id']} ({session.get('status')}), project {session.get('project')}, "
        f"started {_short_time(session.get('started_at'))}"
        + (f", ended {_short_time(session.get('ended_at'))}" if session.get("ended_at") else "")
    ]
    checkpoint = session.get("checkpoint")
    if checkpoint:
        lines.append(f"\nCheckpoint ({checkpoint.get('trigger') or 'saved'}):")
        for key in ("task", "progress", "next_steps", "open_questions"):
            if checkpoint.get(key):
                lines.append(f"- {key.replace('_', ' ')}: {checkpoint[key]}")
        if checkpoint.get("files"):
            lines.append("- files in flight: " + ", ".join(map(str, checkpoint["files"])))
    summary = session.get("summary")
    if summary:
        lines.append("\nSummary:")
        for key in ("request", "completed", "learned", "next_steps"):
            if summary.get(key):
                lines.append(f"- {key.replace('_', ' ')}: {summary[key]}")
        if summary.get("files"):
            lines.append("- files changed: " + ", ".join(map(str, summary["files"])))
    if session.get("plan"):
        lines.append(f"\nPlan: {_one_line(str(session['plan']), 600)}")
    prompts = session.get("prompts") or []
    if prompts:
        lines.append("\nLast prompts:")
        for prompt in prompts[-3:]:
            lines.append(f"- {_one_line(prompt.get('text'), 200)}")
    observations = session.get("observations") or []
    if observations:
        lines.append("\nLast actions:")
        lines.extend(index_line(o) for o in observations[-8:])
    return "\n".join(lines)
