"""The project profile, computed without an LLM: what the project is and where its work stands.

For the context builder (retrieval): call `load_profile(conn, project_id, settings)` inside a read
and put `render_profile(profile)` first in the session-start context. It uses the cached profile
when still valid (same data mark, within `profile_ttl_seconds`) and computes a fresh one otherwise
without writing (reads may be query-only); `GET /api/projects/{id}/profile` refreshes the cache.

`build_profile` is pure and deterministic over the rows `worker.store.profiles` reads.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from worker.clock import now_ms, to_iso
from worker.memory.activity import (
    clip,
    command_succeeded,
    command_text,
    is_looking_command,
    meaningful_prompts,
    observation_files,
    plan_items,
)
from worker.memory.checkpoint import files_in_flight
from worker.settings import Settings
from worker.store import profiles

LANGUAGES: dict[str, str] = {
    ".py": "Python",
    ".pyi": "Python",
    ".ipynb": "Jupyter",
    ".js": "JavaScript",
    ".mjs": "JavaScript",
    ".cjs": "JavaScript",
    ".jsx": "JavaScript",
    ".ts": "TypeScript",
    ".tsx": "TypeScript",
    ".go": "Go",
    ".rs": "Rust",
    ".java": "Java",
    ".kt": "Kotlin",
    ".kts": "Kotlin",
    ".scala": "Scala",
    ".rb": "Ruby",
    ".php": "PHP",
    ".cs": "C#",
    ".fs": "F#",
    ".c": "C",
    ".h": "C",
    ".cc": "C++",
    ".cpp": "C++",
    ".cxx": "C++",
    ".hpp": "C++",
    ".m": "Objective-C",
    ".swift": "Swift",
    ".dart": "Dart",
    ".ex": "Elixir",
    ".exs": "Elixir",
    ".erl": "Erlang",
    ".hs": "Haskell",
    ".clj": "Clojure",
    ".lua": "Lua",
    ".r": "R",
    ".jl": "Julia",
    ".zig": "Zig",
    ".sh": "Shell",
    ".bash": "Shell",
    ".zsh": "Shell",
    ".ps1": "PowerShell",
    ".sql": "SQL",
    ".html": "HTML",
    ".css": "CSS",
    ".scss": "SCSS",
    ".vue": "Vue",
    ".svelte": "Svelte",
    ".tf": "Terraform",
    ".proto": "Protocol Buffers",
}
SPECIAL_FILES = {"dockerfile": "Dockerfile", "makefile": "Makefile"}

_COMMAND_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "test",
        re.compile(
            r"\b(pytest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|unittest|"
            r"(npm|pnpm|yarn|bun|go|cargo|mix|dotnet|mvn|gradle|gradlew|deno|make|just)\s+(run\s+)?test\w*)\b"
        ),
    ),
    ("lint", re.compile(r"\b(ruff|flake8|pylint|eslint|clippy|golangci-lint|rubocop|lint)\b")),
    ("typecheck", re.compile(r"\b(mypy|pyright|tsc|typecheck)\b")),
    ("format", re.compile(r"\b(black|prettier|gofmt|rustfmt|fmt|format)\b")),
    (
        "build",
        re.compile(
            r"\b(make|cmake|ninja|bazel|build|compile|webpack|vite|gradle|mvn|cargo|go\s+build|"
            r"docker\s+build|pip\s+install\s+-e|uv\s+sync|npm\s+(ci|install)|pnpm\s+install)\b"
        ),
    ),
)

MAX_LANGUAGES = 5
MAX_COMMANDS = 6
MAX_FOLDERS = 6
MAX_MEMORIES = 6
MAX_FLIGHT_FILES = 10


def language_of(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1].lower()
    if name in SPECIAL_FILES:
        return SPECIAL_FILES[name]
    dot = name.rfind(".")
    return LANGUAGES.get(name[dot:]) if dot > 0 else None


def command_kind(command: str) -> str | None:
    """test | lint | typecheck | format | build, or None for any other command."""
    lowered = command.lower()
    for kind, pattern in _COMMAND_KINDS:
        if pattern.search(lowered):
            return kind
    return None


def _languages(files: Sequence[str]) -> list[dict[str, Any]]:
    counts = Counter(lang for lang in (language_of(f) for f in set(files)) if lang)
    total = sum(counts.values())
    return [
        {"language": lang, "files": n, "share": round(n / total, 2)}
        for lang, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LANGUAGES]
    ]


def _folders(files: Sequence[str]) -> list[dict[str, Any]]:
    counts: Counter[str] = Counter()
    for path in set(files):
        if path.startswith("/") or "/" not in path:
            continue  # outside the project, or at its top level
        counts[path.split("/", 1)[0] + "/"] += 1
    return [
        {"folder": folder, "files": n}
        for folder, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_FOLDERS]
    ]


def _working_commands(observations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    runs: Counter[str] = Counter()
    kinds: dict[str, str] = {}
    last: dict[str, str] = {}
    for obs in observations:
        if obs.get("type") != "command" or command_succeeded(obs) is not True:
            continue
        command = command_text(obs)
        if not command or is_looking_command(command):
            continue
        kind = command_kind(command)
        if kind is None:
            continue
        command = clip(command, 120)
        runs[command] += 1
        kinds[command] = kind
        last[command] = str(obs.get("created_at") or "")
    ranked = sorted(runs, key=lambda c: (-runs[c], last[c] == "", c))[:MAX_COMMANDS]
    return [
        {"command": c, "kind": kinds[c], "runs": runs[c], "last_at": last[c] or None}
        for c in ranked
    ]


def _memory_lines(memories: Sequence[Mapping[str, Any]], kind: str) -> list[dict[str, Any]]:
    picked = [m for m in memories if m.get("kind") == kind]
    picked.sort(key=lambda m: (-int(m.get("importance") or 0), -int(m.get("updated_ms") or 0)))
    return [
        {"id": m["id"], "content": clip(str(m["content"]), 300), "importance": m["importance"]}
        for m in picked[:MAX_MEMORIES]
    ]


def build_profile(
    project: Mapping[str, Any],
    observations: Sequence[Mapping[str, Any]],
    prompts: Sequence[Mapping[str, Any]],
    memories: Sequence[Mapping[str, Any]],
    latest_session: Mapping[str, Any] | None,
    latest_session_observations: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Static (languages, working commands, folders, decisions, preferences) and dynamic parts.

    Observations and prompts oldest first; memories are the live important ones of the project.
    """
    root = str(project["key"])
    touched = [
        path
        for obs in observations
        if obs.get("type") in ("file_write", "research")
        for path in observation_files(obs, root)
    ]
    asked = meaningful_prompts(prompts)
    plan = latest_session.get("plan") if latest_session else None
    in_progress = plan_items(plan, "in_progress")
    flight = files_in_flight(latest_session_observations, root, MAX_FLIGHT_FILES)
    return {
        "project": {"id": project["id"], "key": root, "name": project["name"]},
        "static": {
            "languages": _languages(touched),
            "commands": _working_commands(observations),
            "folders": _folders(touched),
            "decisions": _memory_lines(memories, "decision"),
            "preferences": _memory_lines(memories, "preference"),
        },
        "dynamic": {
            "current_task": clip(asked[-1], 300) if asked else None,
            "in_progress": in_progress,
            "session_id": latest_session.get("id") if latest_session else None,
            "files_in_flight": flight,
            "last_activity_at": observations[-1].get("created_at") if observations else None,
        },
    }


def render_profile(profile: Mapping[str, Any], *, max_items: int = 5) -> str:
    """Compact Markdown for the start of the session context ("" when there is nothing to say)."""
    static = profile.get("static") or {}
    dynamic = profile.get("dynamic") or {}
    name = (profile.get("project") or {}).get("name") or ""
    lines: list[str] = []
    langs = static.get("languages") or []
    if langs:
        shown = ", ".join(f"{x['language']} {round(x['share'] * 100)}%" for x in langs[:4])
        lines.append(f"**Project {name}:** {shown}")
    commands = static.get("commands") or []
    if commands:
        lines.append(
            "**Commands that work:** "
            + ", ".join(f"`{c['command']}` ({c['kind']})" for c in commands[:max_items])
        )
    folders = static.get("folders") or []
    if folders:
        lines.append("**Main folders:** " + ", ".join(f["folder"] for f in folders[:max_items]))
    for title, key in (("Decisions", "decisions"), ("Preferences", "preferences")):
        items = static.get(key) or []
        if items:
            lines.append(f"**{title}:**")
            lines += [f"- {m['content']}" for m in items[:max_items]]
    if dynamic.get("current_task"):
        lines.append(f"**Current task:** {dynamic['current_task']}")
    for item in (dynamic.get("in_progress") or [])[:max_items]:
        lines.append(f"- in progress: {item}")
    flight = dynamic.get("files_in_flight") or []
    if flight:
        lines.append("**Files in flight:** " + ", ".join(flight[:max_items]))
    return "\n".join(lines)


def compute_profile(conn: sqlite3.Connection, project_id: int) -> dict[str, Any] | None:
    """A fresh profile from the database (None if the project does not exist)."""
    rows = profiles.profile_rows(conn, project_id)
    if rows is None:
        return None
    profile = build_profile(
        rows["project"],
        rows["observations"],
        rows["prompts"],
        rows["memories"],
        rows["latest_session"],
        rows["latest_session_observations"],
    )
    profile["computed_at"] = to_iso(now_ms())
    return profile


def load_profile(
    conn: sqlite3.Connection, project_id: int, settings: Settings
) -> dict[str, Any] | None:
    """The cached profile if still valid, else a fresh one (never writes; safe in a read)."""
    mark = profiles.data_mark(conn, project_id)
    cached = profiles.cached(conn, project_id, mark, settings.profile_ttl_seconds)
    if cached is not None:
        return {**cached, "cached": True}
    fresh = compute_profile(conn, project_id)
    return None if fresh is None else {**fresh, "cached": False}


def refresh_profile(
    conn: sqlite3.Connection, project_id: int, settings: Settings, *, force: bool = False
) -> dict[str, Any] | None:
    """Like load_profile, but stores a freshly computed profile in the cache (inside a write)."""
    mark = profiles.data_mark(conn, project_id)
    if not force:
        cached = profiles.cached(conn, project_id, mark, settings.profile_ttl_seconds)
        if cached is not None:
            return {**cached, "cached": True}
    fresh = compute_profile(conn, project_id)
    if fresh is None:
        return None
    profiles.store_cache(conn, project_id, mark, fresh)
    return {**fresh, "cached": False}
