"""Months of routine use before a project's real sessions (bench/coding_memory.py --pad N).

A project's history in the corpus is a few sessions; a real install holds thousands of items
per project, most of them routine: a file read, a small edit, a green test run, a git command, a
search. Judgment must hold among those. This module writes such sessions, deterministically
(seeded by the project's id), from the project's own files and the commands its history ran
successfully, in the corpus's event format, so they replay like the rest. No generated event
holds any probe's marker (relevant or acceptable): padding never answers a probe, and every
relevant marker still occurs in exactly one event.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

# A command this routine is worth running again and again (tests, builds, linters, git).
ROUTINE = re.compile(
    r"\b(test|tests|pytest|build|lint|vet|check|fmt|format|clippy|ruff|mypy|eslint|tsc|"
    r"git (status|log|diff|branch|fetch|pull))\b"
)
COMMENT = {
    ".py": "#",
    ".rb": "#",
    ".sh": "#",
    ".yml": "#",
    ".yaml": "#",
    ".toml": "#",
    ".tf": "#",
    ".ex": "#",
    ".exs": "#",
    ".r": "#",
    ".pl": "#",
    ".sql": "--",
    ".lua": "--",
    ".hs": "--",
}
TASKS = (
    "run the tests for {stem}",
    "tidy up {name}",
    "what does {name} do?",
    "add a docstring/comment to the top of {name}",
    "check git status and the last commits",
    "rename a local variable in {name} for clarity",
    "look through {folder} for leftover debug output",
    "quick sanity check: does the build still pass?",
    "show me where {ident} is used",
    "small cleanup in {name}, nothing functional",
)
AUTHORS = ("wip", "tidy", "chore", "refactor", "docs", "test")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def _flat(text: str) -> str:
    return " ".join(text.split())


class Padder:
    """Routine sessions for one project (paths relative to its `root`, as the corpus has them)."""

    def __init__(self, project: dict[str, Any], files: dict[str, str]) -> None:
        self.project = project
        self.root = str(project["root"]).rstrip("/")
        self.markers = [
            _flat(m) for p in project["probes"] for m in [*p["relevant"], *p["acceptable"]] if m
        ]
        self.files = {rel: text for rel, text in sorted(files.items()) if "." in rel}
        self.commands = self._routine_commands()
        self.idents = sorted(
            {
                w
                for text in self.files.values()
                for w in re.findall(r"\b[A-Za-z_][A-Za-z0-9_]{5,30}\b", text)
                if not w.isupper() and ("_" in w or re.search(r"[a-z][A-Z]", w))
            }
        )

    def _routine_commands(self) -> list[dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for session in self.project["sessions"]:
            for event in session["events"]:
                if (
                    event.get("hook_event_name") != "PostToolUse"
                    or event.get("tool_name") != "Bash"
                ):
                    continue
                command = str((event.get("tool_input") or {}).get("command") or "")
                if ROUTINE.search(command) and command not in found:
                    found[command] = event
        return [found[c] for c in sorted(found)]

    def clean(self, event: dict[str, Any]) -> bool:
        text = _flat("\n".join(_strings(event)))
        return not any(m in text for m in self.markers)

    def _path(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def _read(self, rel: str) -> dict[str, Any]:
        text = self.files[rel]
        lines = text.count("\n") + 1
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": self._path(rel)},
            "tool_response": {
                "type": "text",
                "file": {
                    "filePath": self._path(rel),
                    "content": text,
                    "numLines": lines,
                    "startLine": 1,
                    "totalLines": lines,
                },
            },
            "duration_ms": 20,
        }

    def _edit(self, rel: str, rng: random.Random) -> dict[str, Any] | None:
        lines = [line for line in self.files[rel].splitlines() if len(line.strip()) > 8]
        if not lines:
            return None
        line = rng.choice(lines)
        mark = COMMENT.get(PurePosixPath(rel).suffix.lower(), "//")
        indent = line[: len(line) - len(line.lstrip())]
        new = f"{indent}{mark} {rng.choice(('checked', 'see below', 'kept as is', 'reviewed'))}\n{line}"
        path = self._path(rel)
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": path, "old_string": line, "new_string": new},
            "tool_response": {
                "filePath": path,
                "oldString": line,
                "newString": new,
                "originalFile": None,
                "structuredPatch": [],
                "userModified": False,
                "replaceAll": False,
            },
            "duration_ms": 30,
        }

    def _grep(self, ident: str, rels: list[str]) -> dict[str, Any]:
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Grep",
            "tool_input": {
                "pattern": ident,
                "path": self.root,
                "output_mode": "files_with_matches",
            },
            "tool_response": {
                "mode": "files_with_matches",
                "filenames": rels,
                "numFiles": len(rels),
            },
            "duration_ms": 15,
        }

    def _bash(self, command: str, stdout: str, description: str) -> dict[str, Any]:
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": description},
            "tool_response": {
                "stdout": stdout,
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": False,
            },
            "duration_ms": 800,
        }

    def _git(self, rng: random.Random, touched: list[str]) -> dict[str, Any]:
        choice = rng.randrange(3)
        if choice == 0 or not touched:
            return self._bash(
                "git status --short", "\n".join(f" M {r}" for r in touched), "Working tree"
            )
        if choice == 1:
            stat = "\n".join(f" {r} | {rng.randint(1, 6)} +" for r in touched)
            return self._bash("git diff --stat", stat, "What changed")
        sha = f"{rng.getrandbits(28):07x}"
        message = f"{rng.choice(AUTHORS)}: {PurePosixPath(touched[0]).name}"
        out = f"[main {sha}] {message}\n {len(touched)} file(s) changed"
        return self._bash(f"git commit -am '{message}'", out, "Commit")

    def session(self, n: int) -> dict[str, Any]:
        """Routine session number `n` (the same for the same project and n)."""
        rng = random.Random(f"{self.project['id']}:{n}")
        rels = list(self.files)
        picked = rng.sample(rels, min(len(rels), rng.randint(1, 3))) if rels else []
        name = PurePosixPath(picked[0]).name if picked else "the project"
        ident = rng.choice(self.idents) if self.idents else "main"
        prompt = rng.choice(TASKS).format(
            name=name,
            stem=PurePosixPath(name).stem,
            folder=str(PurePosixPath(picked[0]).parent) if picked else ".",
            ident=ident,
        )
        events: list[dict[str, Any]] = [
            {"hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-4-5"},
            {"hook_event_name": "UserPromptSubmit", "prompt": prompt},
        ]
        touched: list[str] = []
        for rel in picked:
            events.append(self._read(rel))
            if rng.random() < 0.5:
                edit = self._edit(rel, rng)
                if edit is not None:
                    events.append(edit)
                    touched.append(rel)
        if rng.random() < 0.5 and picked:
            holders = [r for r in rels if ident in self.files[r]][:5]
            events.append(self._grep(ident, holders or picked[:1]))
        for _ in range(rng.randint(1, 3)):
            if self.commands and rng.random() < 0.7:
                events.append(json.loads(json.dumps(rng.choice(self.commands))))
            else:
                events.append(self._git(rng, touched))
        said = f"Done: {prompt[0].upper()}{prompt[1:].rstrip('?')}; nothing else changed."
        events += [
            {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": said},
            {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"},
        ]
        kept = [e for e in events if self.clean(e)]
        return {"id": f"pad{n}", "events": kept}

    def sessions(self, items: int) -> list[dict[str, Any]]:
        """Routine sessions holding about `items` items (a prompt, a summary and the tool calls
        of each count one)."""
        out: list[dict[str, Any]] = []
        count, n = 0, 0
        while count < items:
            session = self.session(n)
            n += 1
            out.append(session)
            count += sum(
                e["hook_event_name"] in ("UserPromptSubmit", "PostToolUse", "Stop")
                for e in session["events"]
            )
        return out
