"""Checks a coding-memory corpus (format `cairn-coding-memory/1`) before it is used.

For each project: the events are hook payloads of the kinds the format lists; every relevant
marker occurs in exactly one event and every acceptable marker in at least one; a `paraphrase`
probe shares no content word with the event its relevant marker is in; `none` probes have no
markers; and over the whole corpus, the counts the issue asks for (projects, stacks, probes, the
share of `none` probes). Prints one line per problem and a summary table; exit 1 on a problem.
Run: `python bench/corpus_check.py [FILE_OR_FOLDER ...]` (default: bench/data/coding-memory/ and
../shared/data/coding-memory-dev.json).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [
    ROOT / "bench" / "data" / "coding-memory",
    ROOT.parent / "shared" / "data" / "coding-memory-dev.json",
]
EVENTS = {
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
    "CairnSaveMemory",
}
CATEGORIES = {"decision", "fact", "lesson", "failure", "file", "paraphrase", "none"}
MEMORY_KINDS = {"decision", "fact", "lesson", "preference", "note"}  # POST /api/memories
# Words that carry no content: a paraphrase may share these with what it should find.
STOP = frozenset(
    re.findall(
        r"\S+",
        """a an the and or but if then else of to in on at by for with from into onto over under about
    as is are was were be been being am do does did done doing have has had having it its it's this
    that these those there here what which who whom whose when where why how i me my we us our you
    your they them their he she him her his hers not no nor so too very can could should would will
    shall may might must just also again still yet any all some each every more most less least
    other another such same than up down out off only own both few many much one two get got make
    made let lets use used using need needs want wants like way ok okay thing things something
    anything nothing last time again now new old do don't didn't doesn't isn't aren't wasn't can't
    won't i'm we're you're it's that's what's let's before after while during since until why
    does did our ours please thanks""",
    )
)
WORD = re.compile(r"[a-z0-9]+")


def flat(text: str) -> str:
    return " ".join(text.split())


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    return []


def event_text(event: dict[str, Any]) -> str:
    return flat("\n".join(strings({k: v for k, v in event.items() if k != "hook_event_name"})))


def content_words(text: str) -> set[str]:
    words = set()
    for word in WORD.findall(text.lower()):
        if word in STOP or len(word) < 3 or word.isdigit():
            continue
        words.add(word[:5])  # a crude stem: "deploys"/"deployment" share "deplo"
    return words


def check_project(
    project: dict[str, Any], where: str, strict: bool = True
) -> tuple[list[str], Counter[str]]:
    problems: list[str] = []
    cats: Counter[str] = Counter()
    for key in ("id", "stack", "root", "description", "sessions", "probes"):
        if key not in project:
            problems.append(f"{where}: project lacks '{key}'")
    if problems:
        return problems, cats
    texts: list[str] = []
    ids = set()
    for session in project["sessions"]:
        if session.get("id") in ids:
            problems.append(f"{where}: session id {session.get('id')} twice")
        ids.add(session.get("id"))
        events = session.get("events") or []
        if not events or events[0].get("hook_event_name") != "SessionStart":
            problems.append(f"{where}/{session.get('id')}: does not open with SessionStart")
        for n, event in enumerate(events):
            name = event.get("hook_event_name")
            at = f"{where}/{session.get('id')}#{n}"
            if name not in EVENTS:
                problems.append(f"{at}: unknown event {name!r}")
            if name in ("PostToolUse", "PostToolUseFailure") and not event.get("tool_name"):
                problems.append(f"{at}: {name} without tool_name")
            if name == "PostToolUseFailure" and "error" not in event:
                problems.append(f"{at}: PostToolUseFailure without error")
            if name == "CairnSaveMemory" and event.get("kind") not in MEMORY_KINDS:
                problems.append(f"{at}: memory kind {event.get('kind')!r}")
            if name == "UserPromptSubmit" and not str(event.get("prompt") or "").strip():
                problems.append(f"{at}: empty prompt")
            texts.append(event_text(event))
    seen_probe = set()
    for probe in project["probes"]:
        pid = probe.get("id")
        at = f"{where} probe {pid}"
        if pid in seen_probe:
            problems.append(f"{at}: id twice")
        if not str(pid).startswith(f"{project['id']}/"):
            # The replay names each probe's session after its id: the same id in two projects
            # would put their probes in one session (and that session in one project).
            problems.append(f"{at}: id does not start with '{project['id']}/'")
        seen_probe.add(pid)
        cat = probe.get("category")
        cats[cat] += 1
        if cat not in CATEGORIES:
            problems.append(f"{at}: category {cat!r}")
        relevant, acceptable = probe.get("relevant"), probe.get("acceptable")
        if not isinstance(relevant, list) or not isinstance(acceptable, list):
            problems.append(f"{at}: relevant/acceptable must be lists")
            continue
        if cat == "none" and (relevant or acceptable):
            problems.append(f"{at}: a none probe has markers")
        if cat != "none" and not relevant:
            problems.append(f"{at}: no relevant marker")
        for marker in relevant:
            holders = [i for i, t in enumerate(texts) if flat(marker) in t]
            if len(holders) != 1:
                problems.append(f"{at}: relevant marker {marker!r} in {len(holders)} events")
            elif cat == "paraphrase" and strict:
                shared = content_words(probe["prompt"]) & content_words(texts[holders[0]])
                if shared:
                    problems.append(f"{at}: paraphrase shares {sorted(shared)} with its event")
        for marker in acceptable:
            if not any(flat(marker) in t for t in texts):
                problems.append(f"{at}: acceptable marker {marker!r} in no event")
    return problems, cats


def load(paths: list[Path]) -> list[tuple[dict[str, Any], str, bool]]:
    out = []
    for path in paths:  # the shared dev half predates the no-shared-word rule: not held to it
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        for file in files:
            doc = json.loads(file.read_text())
            if doc.get("format") != "cairn-coding-memory/1":
                raise SystemExit(f"{file}: format is not cairn-coding-memory/1")
            strict = "shared" not in file.parts
            out += [(p, f"{file.name}:{p.get('id')}", strict) for p in doc["projects"]]
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or DEFAULT
    projects = load(paths)
    problems: list[str] = []
    cats: Counter[str] = Counter()
    events = 0
    ids: Counter[str] = Counter(p.get("id") for p, _, _ in projects)
    for pid, n in ids.items():
        if n > 1:
            problems.append(f"project id {pid} in {n} files")
    for project, where, strict in projects:
        found, counted = check_project(project, where, strict)
        problems += found
        cats += counted
        events += sum(len(s.get("events") or []) for s in project.get("sessions") or [])
    for line in problems:
        print(line)
    probes = sum(cats.values())
    stacks = {p.get("stack") for p, _, _ in projects}
    print(f"projects {len(projects)}, stacks {len(stacks)}, events {events}, probes {probes}")
    print("categories: " + ", ".join(f"{c} {n}" for c, n in sorted(cats.items())))
    if probes:
        print(f"none share {cats['none'] / probes:.2f}")
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
