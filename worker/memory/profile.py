"""The project profile, computed without an LLM: what the project is and where its work stands.

For the context builder (retrieval): call `load_profile_to_cache(conn, project_id, settings)` inside
a read and put `render_profile(profile)` first in the session-start context. It uses the cached
profile when still valid (same data mark, within `profile_ttl_seconds`) and computes a fresh one
otherwise without writing (reads may be query-only), handing back the entry for the caller to
cache in a write; `GET /api/projects/{id}/profile` and session summaries refresh the cache too.

`build_profile` is pure and deterministic over the rows `worker.store.profiles` reads.
"""

from __future__ import annotations

import re
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
from worker.store.db import AnyDb

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


def _iso(value: Any) -> str:
    """Observation times arrive as epoch ms (lean profile rows) or ISO strings (API rows)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return to_iso(value) or ""
    return str(value or "")


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
        last[command] = _iso(obs.get("created_at"))
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


def build_static(
    project: Mapping[str, Any],
    observations: Sequence[Mapping[str, Any]],
    memories: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Languages, working commands, main folders, important decisions and preferences.

    Observations oldest first; memories are the live important ones of the project.
    """
    root = str(project["key"])
    touched = [
        path
        for obs in observations
        if obs.get("type") in ("file_write", "research")
        for path in observation_files(obs, root)
    ]
    return {
        "languages": _languages(touched),
        "commands": _working_commands(observations),
        "folders": _folders(touched),
        "decisions": _memory_lines(memories, "decision"),
        "preferences": _memory_lines(memories, "preference"),
    }


def build_dynamic(
    project: Mapping[str, Any],
    prompts: Sequence[Mapping[str, Any]],
    latest_session: Mapping[str, Any] | None,
    latest_session_observations: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Current task (latest real prompt), in-progress plan items, files in flight."""
    asked = meaningful_prompts(prompts)
    plan = latest_session.get("plan") if latest_session else None
    last = latest_session_observations[-1] if latest_session_observations else None
    return {
        "current_task": clip(asked[-1], 300) if asked else None,
        "in_progress": plan_items(plan, "in_progress"),
        "session_id": latest_session.get("id") if latest_session else None,
        "files_in_flight": files_in_flight(
            latest_session_observations, str(project["key"]), MAX_FLIGHT_FILES
        ),
        "last_edit_at": _iso(last.get("created_at")) or None if last else None,
    }


def build_profile(
    project: Mapping[str, Any],
    observations: Sequence[Mapping[str, Any]],
    prompts: Sequence[Mapping[str, Any]],
    memories: Sequence[Mapping[str, Any]],
    latest_session: Mapping[str, Any] | None,
    latest_session_observations: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The whole profile from its rows (pure)."""
    return {
        "project": {"id": project["id"], "key": project["key"], "name": project["name"]},
        "static": build_static(project, observations, memories),
        "dynamic": build_dynamic(project, prompts, latest_session, latest_session_observations),
    }


def render_profile(
    profile: Mapping[str, Any], *, max_items: int = 5, max_chars: int | None = None
) -> str:
    """Compact Markdown for the start of the session context ("" when there is nothing to say).

    With `max_chars`, whole lines are kept in order until the next one would not fit.
    """
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
    flight = dynamic.get("files_in_flight") or []
    in_progress = (dynamic.get("in_progress") or [])[:max_items]
    # The latest prompt alone is no profile (the last summary and checkpoint carry it): the
    # current task is shown only for a project with some recorded work.
    if dynamic.get("current_task") and (lines or flight or in_progress):
        lines.append(f"**Current task:** {dynamic['current_task']}")
    lines += [f"- in progress: {item}" for item in in_progress]
    if flight:
        lines.append("**Files in flight:** " + ", ".join(flight[:max_items]))
    if max_chars is not None:
        kept: list[str] = []
        used = 0
        for line in lines:
            if used + len(line) + (1 if kept else 0) > max_chars:
                break
            used += len(line) + (1 if kept else 0)
            kept.append(line)
        lines = kept
    return "\n".join(lines)


def _static(
    conn: AnyDb, project: Mapping[str, Any], settings: Settings, *, force: bool, reader: str | None
) -> tuple[dict[str, Any], bool, dict[str, Any] | None]:
    """(static part, from cache?, cache entry to store or None). On a team database it is
    `reader`'s, built from the observations they may see and cached for them."""
    pid = int(project["id"])
    marks = profiles.marks(conn, pid)
    if not force:
        hit = profiles.cached_static(
            conn,
            pid,
            marks,
            ttl_seconds=settings.context.profile_ttl_seconds,
            min_refresh_seconds=settings.context.profile_min_refresh_seconds,
            reader=reader,
        )
        if hit is not None:
            return hit["static"], True, None
    observations, memories = profiles.static_rows(conn, pid, visible_to=reader)
    static = build_static(project, observations, memories)
    entry = {**marks, "at": now_ms(), "computed_at": to_iso(now_ms()), "static": static}
    if reader is not None:
        entry["reader"] = reader
    return static, False, entry


def _assemble(
    conn: AnyDb,
    settings: Settings,
    project_id: int,
    *,
    force: bool,
    store: bool,
    reader: str | None,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(profile, the recomputed static part's cache entry if it was not stored here).

    The dynamic part (current task, session, files in flight) is read as `reader`: never a
    teammate's private prompt or observation (store/privacy.py). The static part is the
    project's: languages, folders and commands that worked, from the observations `reader` may
    see, cached per reader on a team database."""
    project = profiles.project_row(conn, project_id)
    if project is None:
        return None, None
    static, cached, entry = _static(conn, project, settings, force=force, reader=reader)
    if entry is not None and store:
        profiles.store_static(conn, project_id, entry)
        entry = None
    prompts, session, flight = profiles.dynamic_rows(conn, project_id, visible_to=reader)
    profile = {
        "project": {"id": project["id"], "key": project["key"], "name": project["name"]},
        "static": static,
        "dynamic": build_dynamic(project, prompts, session, flight),
        "cached": cached,
        "computed_at": to_iso(now_ms()),
    }
    return profile, entry


def compute_profile(conn: AnyDb, project_id: int, *, reader: str | None) -> dict[str, Any] | None:
    """A fresh profile from the database, cache ignored (None if the project does not exist)."""
    return _assemble(conn, Settings(), project_id, force=True, store=False, reader=reader)[0]


def load_profile(
    conn: AnyDb, project_id: int, settings: Settings, *, reader: str | None
) -> dict[str, Any] | None:
    """The profile; its static part from the cache when valid. Never writes (safe in a read).

    The static part (a scan of recent observations) is cached: it is recomputed when important
    memories change, when `profile_ttl_seconds` pass, or after new observations once the cached
    copy is older than `profile_min_refresh_seconds`. The dynamic part is always fresh (cheap).
    """
    return _assemble(conn, settings, project_id, force=False, store=False, reader=reader)[0]


def load_profile_to_cache(
    conn: AnyDb, project_id: int, settings: Settings, *, reader: str | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Like load_profile (never writes), plus the cache entry of a static part it had to
    recompute, for the caller to store in a write of its own (`profiles.store_static`): the
    session-start context would otherwise rescan the project's observations every time."""
    return _assemble(conn, settings, project_id, force=False, store=False, reader=reader)


def refresh_profile(
    conn: AnyDb, project_id: int, settings: Settings, *, reader: str | None, force: bool = False
) -> dict[str, Any] | None:
    """Like load_profile, but stores a recomputed static part in the cache (inside a write)."""
    return _assemble(conn, settings, project_id, force=force, store=True, reader=reader)[0]
