"""Reading what a session did from its rows: commands and exit codes, files, prompts, messages.

Pure functions over API-shaped dicts (observations.to_dict, prompt dicts, plan items); shared by
summary, checkpoint, profile and report so they all read the activity the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_TRIVIAL_PROMPTS = frozenset(
    {
        "y",
        "yes",
        "yep",
        "yeah",
        "no",
        "n",
        "ok",
        "okay",
        "k",
        "sure",
        "thanks",
        "thank you",
        "continue",
        "go on",
        "go ahead",
        "proceed",
        "do it",
        "please continue",
        "lgtm",
        "done",
        "next",
        "retry",
        "try again",
    }
)

# Shell commands that only look around: never "work done", never a build/test command.
_LOOKING_COMMANDS = frozenset(
    {
        "ls",
        "ll",
        "cat",
        "pwd",
        "echo",
        "cd",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "rg",
        "find",
        "fd",
        "which",
        "whoami",
        "wc",
        "tree",
        "file",
        "stat",
        "du",
        "df",
        "env",
        "printenv",
        "date",
        "true",
        "sleep",
    }
)
_LOOKING_GIT = frozenset(
    {"status", "log", "diff", "show", "branch", "remote", "blame", "rev-parse"}
)

_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "status_code")
_EXIT_RE = re.compile(r"\bexit(?:[ _]?code|[ _]status)?\s*[:=]?\s*(-?\d{1,3})\b", re.IGNORECASE)
_COMMAND_LINE_RE = re.compile(r"^\s*(?:\$|command:|cmd:)\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_TITLE_PREFIX_RE = re.compile(
    r"^\s*(?:\$\s*|ran\s*:?\s+|run\s*:?\s+|running\s+|bash\s*[:>]\s*|command\s*:\s*|shell\s*:\s*)",
    re.IGNORECASE,
)
_TITLE_SUFFIX_RE = re.compile(
    r"\s*(?:\((?:exit|exit code|code)\s*-?\d+\)|→\s*exit\s*-?\d+|-> ?exit\s*-?\d+)\s*$",
    re.IGNORECASE,
)
_WS_RE = re.compile(r"\s+")


def clip(text: str, limit: int) -> str:
    """Whitespace collapsed, cut at a word boundary with an ellipsis when longer than `limit`."""
    flat = _WS_RE.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[: max(1, limit - 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


def is_trivial_prompt(text: str) -> bool:
    """An acknowledgement ("yes", "continue") that says nothing about the task."""
    words = re.sub(r"[^\w\s']", " ", text.lower()).split()
    return not words or " ".join(words) in _TRIVIAL_PROMPTS


def meaningful_prompts(prompts: Iterable[Mapping[str, Any]]) -> list[str]:
    """Prompt texts in order, acknowledgements and background-task notifications removed."""
    return [
        str(p["text"])
        for p in prompts
        if not is_trivial_prompt(str(p.get("text") or ""))
        and not str(p.get("text") or "").lstrip().startswith("<task-notification>")
    ]


def exit_code(observation: Mapping[str, Any]) -> int | None:
    """The exit code a command observation records (meta first, then body/title), or None."""
    meta = observation.get("meta")
    if isinstance(meta, Mapping):
        for key in _EXIT_KEYS:
            value = meta.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lstrip("-").isdigit():
                return int(value)
    for text in (str(observation.get("title") or ""), str(observation.get("body") or "")):
        match = _EXIT_RE.search(text)
        if match:
            return int(match.group(1))
    return None


def command_succeeded(observation: Mapping[str, Any]) -> bool | None:
    """True for exit code 0, False for a failure, None when the observation cannot tell.

    Claude Code reports a Bash exit code only when the command fails (PostToolUseFailure, or
    "Exit code N" in the error), and Cairn's hook records every such code; so a command the hook
    recorded (meta.source "claude-code") without one and not interrupted ran successfully.
    """
    code = exit_code(observation)
    if code is not None:
        return code == 0
    title = str(observation.get("title") or "")
    if title.endswith(("(interrupted)", "(failed)")):
        return False
    meta = observation.get("meta")
    if isinstance(meta, Mapping) and meta.get("source") == "claude-code":
        return True
    return None


def command_text(observation: Mapping[str, Any]) -> str:
    """The shell command of a command observation (meta.command, a `$ ...` body line, or title)."""
    meta = observation.get("meta")
    if isinstance(meta, Mapping):
        value = meta.get("command")
        if isinstance(value, str) and value.strip():
            return _WS_RE.sub(" ", value).strip()
    match = _COMMAND_LINE_RE.search(str(observation.get("body") or ""))
    if match:
        return _WS_RE.sub(" ", match.group(1)).strip()
    title = _TITLE_PREFIX_RE.sub("", str(observation.get("title") or ""))
    return _WS_RE.sub(" ", _TITLE_SUFFIX_RE.sub("", title)).strip()


def _first_words(command: str) -> list[str]:
    # Skip env assignments and wrappers so "FOO=1 sudo make test" reads as "make test".
    words = [w for w in command.split() if w]
    while words and (("=" in words[0] and not words[0].startswith("-")) or words[0] in ("sudo",)):
        words.pop(0)
    return words


def is_looking_command(command: str) -> bool:
    """A command that only inspects (ls, cat, git status): not work done."""
    first_segment = re.split(r"\s*(?:&&|\|\||;|\|)\s*", command.strip(), maxsplit=1)[0]
    words = _first_words(first_segment)
    if not words:
        return True
    head = words[0].rsplit("/", 1)[-1]
    if head in _LOOKING_COMMANDS:
        return True
    return head == "git" and len(words) > 1 and words[1] in _LOOKING_GIT


def relative_path(path: str, root: str | None) -> str:
    """`path` relative to the project root when it lies inside it."""
    clean = path.strip()
    if root and root.startswith("/"):
        base = root.rstrip("/") + "/"
        if clean.startswith(base):
            clean = clean[len(base) :]
    while clean.startswith("./"):
        clean = clean[2:]
    return clean or path


def observation_files(observation: Mapping[str, Any], root: str | None) -> list[str]:
    files = observation.get("files") or []
    paths = [relative_path(str(f), root) for f in files if str(f).strip()]
    # "." is the project itself (older hooks recorded it for a Grep over the root), not a file.
    return [p for p in paths if p not in (".", "./")]


def unique(items: Iterable[str]) -> list[str]:
    """De-duplicated (case and whitespace insensitive), first occurrence kept, empties dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = " ".join(item.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(item.strip())
    return out


def plan_items(plan: Any, *statuses: str) -> list[str]:
    """Contents of TodoWrite-style plan items whose status is one of `statuses`."""
    if not isinstance(plan, list):
        return []
    out: list[str] = []
    for item in plan:
        if isinstance(item, Mapping) and item.get("status") in statuses:
            content = item.get("content")
            if isinstance(content, str) and content.strip():
                out.append(content.strip())
    return out


def failing_commands(observations: Iterable[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """Commands whose latest run failed (non-zero exit) and never succeeded afterwards.

    A later successful command that runs the failed one as one of its steps
    (`pytest -x && git commit ...`) counts as a success of it too.
    """
    last: dict[str, int | None] = {}
    for obs in observations:
        if obs.get("type") != "command":
            continue
        command = command_text(obs)
        if command:
            code = exit_code(obs)
            if not code:  # 0, or no code: PostToolUse fires only for commands that succeeded
                for step in _COMMAND_STEP_RE.split(command):
                    if step.strip() in last:
                        last[step.strip()] = 0
            last.pop(command, None)  # keep insertion order = order of the latest run
            last[command] = code
    return [(cmd, code) for cmd, code in last.items() if code is not None and code != 0]


_COMMAND_STEP_RE = re.compile(r"&&|\|\||;|\n")


# ---------------------------------------------------------------- the final assistant message

_HEADING_RE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?([^*_#:\n]{2,60}?)(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*$"
)
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)]|\[[ xX]\])\s+")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9`\"'(\[])")
_SECTION_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "next",
        (
            "next step",
            "next steps",
            "remaining",
            "todo",
            "to do",
            "follow-up",
            "follow up",
            "follow-ups",
            "what's left",
            "left to do",
            "still to do",
            "open items",
            "recommendations",
            "suggestions",
        ),
    ),
    ("questions", ("open question", "open questions", "questions", "unresolved")),
    (
        "learned",
        (
            "finding",
            "findings",
            "key findings",
            "learned",
            "what i learned",
            "lessons",
            "root cause",
            "cause",
            "notes",
            "insights",
            "observations",
            "discovered",
            "why",
        ),
    ),
    ("done", ("summary", "changes", "what i did", "done", "completed", "what changed")),
)
_LEARNED_CUES = re.compile(
    r"\b(?:found|turns out|turned out|discovered|learn(?:ed|t)|reali[sz]ed|root cause|the cause|"
    r"caused by|because|the (?:issue|problem|bug) (?:was|is)|note that|apparently|requires|"
    r"depends on|is configured|(?:does not|doesn't|cannot|can't) (?:support|handle|work)|"
    r"only works|is stored|lives in|is defined in|is located|confirmed|verified that|"
    r"uses|expects|must be|means that|which means|(?:is|are) only used|only (?:when|if)|"
    r"defaults? to|is limited to|is set to)\b",
    re.IGNORECASE,
)
_NEXT_CUES = re.compile(
    r"\b(?:next step|next,|todo|to-do|remaining|still (?:need|needs|to)|not yet|follow[- ]up|"
    r"you (?:may|might|could|should) (?:want to )?|we (?:could|should)|should also|consider|"
    r"would need|will need|needs? to be|left to|haven't|have not|pending|later)\b",
    re.IGNORECASE,
)


_COMPACT_HEADING_RE = re.compile(r"^\s*\d{1,2}\.\s+([A-Z][^:\n]{1,60}):\s*$")
# Claude Code's compaction summary: numbered sections, of which these say what comes next.
_COMPACT_SECTIONS = {
    "pending tasks": "Next steps",
    "optional next step": "Next steps",
    "errors and fixes": "Findings",
    "problem solving": "Findings",
}


def compact_summary_message(text: object) -> str | None:
    """A /compact summary (`<analysis>` + `<summary>` with numbered sections) rewritten with the
    headings message_parts reads; sections that only restate the conversation are dropped."""
    if not isinstance(text, str) or not text.strip():
        return None
    start, end = text.find("<summary>"), text.rfind("</summary>")
    if start >= 0:
        text = text[start + len("<summary>") : end if end > start else None]
    lines: list[str] = []
    keep = False
    for line in text.splitlines():
        match = _COMPACT_HEADING_RE.match(line)
        if match:
            heading = _COMPACT_SECTIONS.get(match.group(1).strip().lower())
            keep = heading is not None
            if heading:
                lines.append(f"## {heading}")
        elif keep:
            lines.append(line)
    return "\n".join(lines).strip() or None


# `Learned: Alpine images have no bash.`, `**Next:** run the migration`: a section named at the
# head of its one line. Only a label that is exactly a section's name counts ("Note: x" is not).
_INLINE_LABEL_RE = re.compile(
    r"^\s*(?:[-*+•]\s+)?(?:\*\*|__)?([A-Za-z][A-Za-z' -]{1,28}?)(?:\*\*|__)?:(?:\*\*|__)?\s+(\S.*)$"
)
# The labels that name a section inline: the plain ones (a heading's wider list, e.g. "Notes" or
# "Why", would turn any remark into a fact memory).
_INLINE_LABELS = {
    **dict.fromkeys(("learned", "learnt", "what i learned", "lesson", "lessons"), "learned"),
    **dict.fromkeys(("finding", "findings", "key findings", "root cause", "discovered"), "learned"),
    **dict.fromkeys(("next", "next step", "next steps", "todo", "to do", "remaining"), "next"),
    **dict.fromkeys(("follow-up", "follow up", "follow-ups"), "next"),
    **dict.fromkeys(("open question", "open questions", "questions"), "questions"),
    **dict.fromkeys(("done", "completed", "what i did", "changes"), "done"),
}


def _inline_label(line: str) -> tuple[str, str] | None:
    """(section, text) of a `Label: text` line whose label names a section, else None."""
    match = _INLINE_LABEL_RE.match(line)
    if not match:
        return None
    section = _INLINE_LABELS.get(match.group(1).strip().lower())
    if section is None:
        return None
    text = _strip_markdown(match.group(2)).strip()
    return (section, text) if len(text) >= 8 else None


def _classify_heading(line: str) -> str | None:
    stripped = line.strip()
    if not stripped or _BULLET_RE.match(stripped):
        return None
    is_marked = (
        stripped.startswith("#") or stripped.endswith(":") or stripped.startswith(("**", "__"))
    )
    if not is_marked:
        return None
    match = _HEADING_RE.match(stripped)
    if not match:
        return None
    words = match.group(1).strip().lower()
    for section, names in _SECTION_WORDS:
        if any(words == n or words.startswith(n + " ") or words.endswith(" " + n) for n in names):
            return section
    return "other"


def _strip_markdown(text: str) -> str:
    text = _BULLET_RE.sub("", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    return _WS_RE.sub(" ", text).strip()


def message_parts(message: str) -> dict[str, list[str]]:
    """Split an assistant message into learned / next / questions / done statements.

    Items under a heading ("Next steps:", "## Findings") take the heading's section; loose
    sentences are classified by cue words ("the root cause was", "you may want to").
    """
    parts: dict[str, list[str]] = {"learned": [], "next": [], "questions": [], "done": []}
    section: str | None = None
    # Loose sentences belong to a heading only in its first paragraph; its bullets, until the next.
    loose_in_section = False
    seen_content = False
    in_code = False
    for raw in message.splitlines():
        if raw.strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if not raw.strip():
            if seen_content:
                loose_in_section = False
            continue
        labelled = _inline_label(raw)
        if labelled is not None:
            section, text = labelled
            parts["questions" if text.endswith("?") else section].append(text)
            seen_content, loose_in_section = True, False
            continue
        heading = _classify_heading(raw)
        if heading is not None:
            section, loose_in_section, seen_content = heading, True, False
            continue
        seen_content = True
        text = _strip_markdown(raw)
        if not text:
            continue
        if section in parts and _BULLET_RE.match(raw):
            assert section is not None
            parts["questions" if text.endswith("?") else section].append(text)
            continue
        owner = section if loose_in_section and section in parts else None
        for sentence in _SENTENCE_SPLIT_RE.split(text):
            sentence = sentence.strip()
            if len(sentence) < 8:
                continue
            if sentence.endswith("?"):
                parts["questions"].append(sentence)
            elif owner is not None:
                parts[owner].append(sentence)
            elif _NEXT_CUES.search(sentence):
                parts["next"].append(sentence)
            elif _LEARNED_CUES.search(sentence) and is_statement(sentence):
                parts["learned"].append(_without_note_prefix(sentence))
    return {key: unique(values) for key, values in parts.items()}


_PROCESS_TALK = re.compile(
    r"^(?:let me|let's|i'll|i will|i'm going to|now i|next i|first,? i|i am going to|okay|ok)\b",
    re.IGNORECASE,
)
MIN_STATEMENT_CHARS = 20
_NOTE_PREFIX = re.compile(r"^(?:note|nb|n\.b\.|fyi|important)\s*:\s*", re.IGNORECASE)


def _without_note_prefix(sentence: str) -> str:
    text = _NOTE_PREFIX.sub("", sentence)
    return text[:1].upper() + text[1:] if text != sentence else sentence


def is_statement(sentence: str) -> bool:
    """A self-contained statement worth keeping (not a lead-in to a list, not process talk)."""
    text = sentence.strip()
    return (
        len(text) >= MIN_STATEMENT_CHARS
        and not text.endswith(":")
        and not _PROCESS_TALK.match(text)
    )
