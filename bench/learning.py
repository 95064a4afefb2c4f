"""Learning from use: does what the agent acted on rank higher, and what it ignored fade?

Two passes over the coding-memory corpus, each project's history replayed first through the
hooks into a real worker (as bench/coding_memory.py does):

1. **Use.** Each probe's prompt in a session of its own: SessionStart, UserPromptSubmit, then a
   scripted agent that acts as a careful engineer would on what it was handed: for each injected
   line that holds one of the probe's markers (the benchmark's own rule for a line that matters)
   it reads the file the line names (a PostToolUse Read), else runs the command the line gives in
   backticks (a PostToolUse Bash), else repeats the line in its closing message; every other
   line it ignores. Then Stop (its closing message) and SessionEnd. The worker judges each
   injection when the turn ends (worker/memory/use.py).
2. **Paraphrases.** Each probe asked again in other words (bench/data/learning-paraphrases.json,
   written without reading the worker or the markers), SessionStart + UserPromptSubmit +
   SessionEnd, scored as bench/coding_memory.py scores a probe; asked twice, by a worker with
   learning off (`CAIRN_LEARNING=0`: outcomes kept, not used) and on, over copies of one store:
   the history and the first pass's outcomes and prompts, without the rest of the first pass's
   own sessions (their reads and summaries would hand each question its earlier self).

Prints both passes' figures and the difference; the last line is one JSON object with
`precision_gain`, `silence_gain`, `recall_change` (on minus off) and the figures.

`--evidence V1,V2,...` asks the second pass with learning on once per `CAIRN_LEARNING_EVIDENCE`
value and reports, for each project, the value the other projects scored best with (leave one
project out; bench/coding_memory.py's objective), so the figure is not fitted to the corpus.

Run: `.venv/bin/python bench/learning.py [--corpus all] [--quick] [--evidence 0.7,1.1,1.6]`
(needs the model).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.coding_memory import (  # noqa: E402
    DATA,
    MORE,
    OBSERVATION_LINE,
    Hooks,
    Session,
    context_of,
    cross_validate,
    flat,
    injected_lines,
    load_corpus,
    observation_text,
    replay,
    score_probe,
    substitute,
    summarise,
    wait_settled,
)
from tests.e2e.worker_process import WorkerProcess, free_port  # noqa: E402

PARAPHRASES = ROOT / "bench" / "data" / "learning-paraphrases.json"
RESULTS = ROOT / "bench" / "results" / "learning.json"
FIGURES = ("recall", "hit_rate", "false_silence", "silence_on_none", "precision")
_FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]*[A-Za-z][\w-]*\.[A-Za-z][A-Za-z0-9]{0,7})\b")
_BACKTICKS = re.compile(r"`([^`\n]{3,200})`")


def start_worker(
    cairn_home: Path, port: int, models: Path, learning: bool, evidence: str = ""
) -> WorkerProcess:
    env = {
        "CAIRN_EMBED_ENABLED": "1",
        "CAIRN_MODELS_DIR": str(models),
        "CAIRN_LEARNING": "1" if learning else "0",
    }
    if evidence:
        env["CAIRN_LEARNING_EVIDENCE"] = evidence
    return WorkerProcess(home=cairn_home, port=port, env_extra=env).start(timeout=120)


def act(
    line: str, repo: Path, worker: WorkerProcess, cache: dict[int, str]
) -> tuple[dict[str, Any] | None, str]:
    """What the scripted agent does about one line that matters: a tool event, else words for
    its closing message."""
    text = line
    match = OBSERVATION_LINE.match(line)
    if match:
        text += " " + observation_text(worker, int(match.group(1)), cache)
    for name in _FILE.findall(text):
        path = repo / name.strip("./")
        if path.is_file():
            read = {"file_path": str(path)}
            response = {"type": "text", "file": {"filePath": str(path), "content": "..."}}
            event = {"tool_name": "Read", "tool_input": read, "tool_response": response}
            return {"hook_event_name": "PostToolUse", **event}, ""
    commands = [c for c in _BACKTICKS.findall(line) if len(c.split()) >= 2]
    if commands:
        bash = {"command": commands[0], "description": ""}
        response = {"stdout": "ok", "stderr": "", "interrupted": False}
        event = {"tool_name": "Bash", "tool_input": bash, "tool_response": response}
        return {"hook_event_name": "PostToolUse", **event}, ""
    return None, flat(line)


def each_probe(
    data: dict[str, Any], repos: dict[str, Path]
) -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """(project id, its repo, probe) for every probe, paths in the repo's own."""
    for project in data["projects"]:
        repo = repos[project["id"]]
        for probe in substitute(project["probes"], project["root"], str(repo)):
            yield project["id"], repo, probe


def opened(live: Session, prompt: str) -> str:
    """A new session's start and its first prompt: the context the prompt was given."""
    live.fire({"hook_event_name": "SessionStart", "source": "startup"})
    return context_of(live.fire({"hook_event_name": "UserPromptSubmit", "prompt": prompt}))


def use_pass(
    data: dict[str, Any],
    repos: dict[str, Path],
    hooks: Hooks,
    worker: WorkerProcess,
    base: Path,
) -> list[dict[str, Any]]:
    rows = []
    cache: dict[int, str] = {}
    for _, repo, probe in each_probe(data, repos):
        live = Session(hooks, repo, base / "transcripts", f"use:{probe['id']}")
        context = opened(live, probe["prompt"])
        row = score_probe(probe, context, worker, cache)
        padding = set(row["padding"])
        said = []
        for line in injected_lines(context):
            if line in padding:
                continue  # the careful engineer leaves what does not concern the task
            event, words = act(line, repo, worker, cache)
            if event is not None:
                live.fire(event)
            if words:
                said.append(words)
        # Lines without their "- [kind]" mark, as an agent would say what it followed.
        plain = [re.sub(r"^[-*]\s*(?:\[\w+\]\s*)?", "", line) for line in said]
        answer = "I followed what I was given: " + " ".join(plain) if plain else "All set."
        live.fire({"hook_event_name": "Stop", "last_assistant_message": answer})
        live.fire({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
        rows.append(row)
    return rows


def ask_pass(
    data: dict[str, Any],
    repos: dict[str, Path],
    hooks: Hooks,
    worker: WorkerProcess,
    base: Path,
    paraphrases: dict[str, str],
    label: str,
) -> list[dict[str, Any]]:
    rows = []
    cache: dict[int, str] = {}
    for project, repo, probe in each_probe(data, repos):
        asked = dict(probe, prompt=paraphrases.get(probe["id"], probe["prompt"]))
        live = Session(hooks, repo, base / "transcripts", f"{label}:{probe['id']}")
        context = opened(live, asked["prompt"])
        live.fire({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
        row = score_probe(asked, context, worker, cache)
        row["project"] = project
        rows.append(row)
    return rows


# The first pass's own sessions leave items (the scripted reads, summaries, memories drawn from
# its closing messages) that would hand a later pass in other words its own earlier session,
# with learning on or off alike. They are taken out (the worker stopped; triggers drop their
# index terms and vectors) so the second pass measures what the outcomes changed. The prompts
# stay: what each item was given for is what its record is weighed by.
TRACES = ("observations", "summaries", "checkpoints", "memories")


def drop_first_pass_traces(cairn_home: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(cairn_home / "cairn.db")
    try:
        with conn:
            return sum(
                conn.execute(f"DELETE FROM {table} WHERE session_id LIKE 'use:%'").rowcount
                for table in TRACES
            )
    finally:
        conn.close()


def use_counts(worker: WorkerProcess) -> dict[str, int]:
    """How the first pass's injections were judged (from the store the worker writes)."""
    import sqlite3

    conn = sqlite3.connect(worker.home / "cairn.db")
    try:
        rows = conn.execute(
            "SELECT COALESCE(outcome, 'pending'), COUNT(*) FROM context_injections GROUP BY 1"
        ).fetchall()
    finally:
        conn.close()
    return {str(k): int(v) for k, v in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("shared", "all"), default="shared")
    parser.add_argument("--quick", action="store_true", help="the first three projects only")
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument(
        "--evidence",
        default="",
        metavar="V1,V2,...",
        help="second passes with learning on at each CAIRN_LEARNING_EVIDENCE value, the one "
        "reported chosen for each project on the others (default: the setting's default only)",
    )
    args = parser.parse_args()
    values = [v.strip() for v in args.evidence.split(",") if v.strip()] or [""]
    paths = [Path(os.environ.get("CAIRN_CODING_DATA", DATA))]
    if args.corpus == "all":
        paths.append(MORE)
    if not paths[0].exists():
        print(f"learning: no data at {paths[0]}", file=sys.stderr)
        return 2
    data = load_corpus(paths)
    if args.quick:
        data["projects"] = data["projects"][:3]
    paraphrases: dict[str, str] = json.loads(PARAPHRASES.read_text())["paraphrases"]
    models = Path(os.environ.get("CAIRN_MODELS_DIR") or ROOT / ".cache" / "models")
    base = Path(tempfile.mkdtemp(prefix="cairn-bench-learning-"))
    home, cairn_home = base / "home", base / "cairn"
    port = free_port()
    hooks = Hooks(home, cairn_home, port)
    try:
        worker = start_worker(cairn_home, port, models, learning=True)
        try:
            repos, _, _ = replay(data, hooks, worker, base, home)
            wait_settled(worker, True, 7200)
            first = use_pass(data, repos, hooks, worker, base)
            wait_settled(worker, True, 7200)
            judged = use_counts(worker)
        finally:
            worker.stop()
        dropped = drop_first_pass_traces(cairn_home)
        # Each second pass starts from the same store.
        snapshot = base / "after-first-pass"
        shutil.copytree(cairn_home, snapshot)
        second: dict[str, list[dict[str, Any]]] = {}
        runs = [("off", False, "")] + [(f"on {v}".strip(), True, v) for v in values]
        for label, learning, value in runs:
            shutil.rmtree(cairn_home)
            shutil.copytree(snapshot, cairn_home)
            worker = start_worker(cairn_home, port, models, learning, value)
            try:
                tag = label.replace(" ", "-")
                second[label] = ask_pass(data, repos, hooks, worker, base, paraphrases, tag)
            finally:
                worker.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    ons = {label: rows for label, rows in second.items() if label != "off"}
    chosen: dict[str, str] = {}
    if len(ons) > 1:  # each project judged at the value the other projects chose
        cv = cross_validate(ons)
        chosen = cv["chosen"]
        second["on"] = [
            row
            for project, label in chosen.items()
            for row in ons[label]
            if row["project"] == project
        ]
    else:
        second["on"] = next(iter(ons.values()))
    figures = {
        "first_pass": summarise(first),
        "off": summarise(second["off"]),
        "on": summarise(second["on"]),
        **{label: summarise(rows) for label, rows in ons.items() if len(ons) > 1},
    }
    print(
        f"{len(first)} probes in {len(data['projects'])} projects; first pass judged: {judged};"
        f" its {dropped} own items set aside"
    )
    extra = [label for label in ons if len(ons) > 1]
    head = f"{'figure':<18}{'first pass':>12}{'2nd, off':>10}"
    head += "".join(f"{label:>10}" for label in extra)
    print(head + f"{'2nd, on':>10}{'on - off':>10}")
    for name in FIGURES:
        a, b, c = (figures[k].get(name) for k in ("first_pass", "off", "on"))
        diff = "" if b is None or c is None else f"{c - b:+.3f}"
        cells = "".join(f"{figures[label].get(name)!s:>10}" for label in extra)
        print(f"{name:<18}{a!s:>12}{b!s:>10}{cells}{c!s:>10}{diff:>10}")
    if chosen:
        print(
            "on: each project at the evidence the other projects chose:",
            sorted(set(chosen.values())),
        )

    def gain(name: str) -> float | None:
        off, on = figures["off"].get(name), figures["on"].get(name)
        return None if off is None or on is None else round(on - off, 3)

    result = {
        "precision_gain": gain("precision"),
        "silence_gain": gain("silence_on_none"),
        "recall_change": gain("recall"),
        "hit_rate_change": gain("hit_rate"),
        "judged": judged,
        "first_pass_items_dropped": dropped,
        "evidence_chosen": chosen,
        "figures": figures,
        "probes": {"first_pass": first, **second},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "probes"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
