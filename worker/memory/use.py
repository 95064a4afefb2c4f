"""Whether the agent used what it was given: the outcome of one injection, from what followed.

When a turn ends (the Stop event), each item the turn's prompt was handed is judged on what the
hooks saw after it in the same session:

- **used** when the agent opened or edited a file the item names (a Read, Edit or Write of it),
  ran the command it gives (the same command, or one holding it), or its closing message quotes
  it: names one of its code names (`parse_invoice`, `billing/exports.py`, `DEFAULT_CHARSET`), or
  says at least `QUOTED_WORDS` of its content words and a `QUOTED_SHARE` of them (or a
  `GIST_SHARE` of its first line's);
- **contradicted** when the user's next prompt corrects it: opens with a correction ("no,",
  "that's wrong", "not anymore", "outdated") and names at least two of its content words;
- **ignored** otherwise.

The evidence is kept in words for the dashboard ("read billing/exports.py"). An item is judged
once per session (one injection row), and only by its own session's events. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from worker.memory.tags import content_words

OUTCOMES = ("used", "ignored", "contradicted")
# A closing message quotes an item when it holds this many of its content words, and this share.
QUOTED_WORDS = 3
QUOTED_SHARE = 0.3
# ... or of its first line (its gist: a long item's detail need not be repeated).
GIST_SHARE = 0.6
# The content words of an item considered (its head: a long observation is mostly output).
ITEM_WORDS = 40
EVIDENCE_CHARS = 200

# A file name: a path or a name with an extension ("billing/exports.py", "Cargo.toml").
_FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]*[A-Za-z][\w-]*\.[A-Za-z][A-Za-z0-9]{0,7})\b")
# A code name: snake_case, a dotted or slashed name, camelCase, an UPPER_CASE setting.
_CODE = re.compile(
    r"[A-Za-z_][\w./-]*[_./][\w./-]*[A-Za-z0-9]|[a-z]+[A-Z]\w+|[A-Z][A-Z0-9]*_[A-Z0-9_]+"
)
_BACKTICKS = re.compile(r"`([^`\n]{3,200})`")
_COMMAND_LINE = re.compile(r"^command: (.+)$", re.MULTILINE)
_CORRECTION = re.compile(
    r"^\W*(no\b|nope\b|wrong\b|that'?s (?:not|wrong|outdated|old)|not any ?more\b|"
    r"(?:this|that|it) is (?:wrong|outdated|stale|not true)|outdated\b|incorrect\b|"
    r"actually,? (?:no|we|it|that)\b|don'?t (?:use|do) that\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Outcome:
    outcome: str  # one of OUTCOMES
    evidence: str


def judge(
    item: Mapping[str, Any],
    after: Sequence[Mapping[str, Any]],
    answer: str | None,
) -> Outcome:
    """The outcome of giving `item`, from the observations `after` it in the same session
    (oldest first) and the agent's closing message `answer`."""
    files = item_files(item)
    commands = item_commands(item)
    for obs in after:
        touched = [str(f) for f in obs.get("files") or []]
        for name in touched:
            if any(same_file(name, mine) for mine in files):
                verb = "edited" if obs.get("type") == "file_write" else "read"
                return Outcome("used", _short(f"{verb} {name}"))
        if obs.get("type") == "command" and commands:
            ran = observed_command(obs)
            if ran and any(same_command(ran, mine) for mine in commands):
                return Outcome("used", _short(f"ran {ran}"))
    if answer:
        quoted = quotes(item, answer)
        if quoted:
            return Outcome("used", _short("the answer says " + ", ".join(quoted)))
    return Outcome("ignored", "not acted on in the turn")


def is_correction(prompt: str) -> bool:
    """The prompt opens as a correction ("no, ...", "that's outdated", "not any more")."""
    return _CORRECTION.search(prompt) is not None


def corrects(prompt: str, item: Mapping[str, Any]) -> str | None:
    """The words of `item` a correcting prompt names (None: not a correction of it)."""
    if not is_correction(prompt):
        return None
    mine = set(_words(item))
    named = [w for w in dict.fromkeys(content_words(prompt)) if w in mine]
    return ", ".join(named[:5]) if len(named) >= 2 else None


def item_files(item: Mapping[str, Any]) -> list[str]:
    """The files an item names: its own `files`, and file names in its text."""
    found = [str(f) for f in item.get("files") or []]
    found += _FILE.findall(_text(item))
    return list(dict.fromkeys(f.strip("./") for f in found if f.strip("./")))


def item_commands(item: Mapping[str, Any]) -> list[str]:
    """The commands an item gives: a command observation's own, and `quoted` commands of two
    words or more in its text."""
    text = _text(item)
    found = (
        [m.strip() for m in _COMMAND_LINE.findall(text)] if item.get("type") == "command" else []
    )
    found += [m.strip() for m in _BACKTICKS.findall(text) if len(m.split()) >= 2]
    return list(dict.fromkeys(_squash(c) for c in found if c.strip()))


def observed_command(obs: Mapping[str, Any]) -> str:
    found = _COMMAND_LINE.findall(str(obs.get("body") or ""))
    return _squash(found[0]) if found else ""


def same_file(seen: str, named: str) -> bool:
    """One path names the other: equal, or one ends with the other ("src/app.py" / "app.py")."""
    a, b = seen.strip("./"), named.strip("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def same_command(ran: str, given: str) -> bool:
    """The command run holds the one given, or the other way round, or both start alike and
    share half their words ("pytest -x tests/test_api.py" / "pytest tests/test_api.py")."""
    if given in ran or ran in given:
        return True
    a, b = ran.split(), given.split()
    if not a or not b or a[0] != b[0]:
        return False
    shared = set(a) & set(b)
    return len(shared) >= 2 and len(shared) / len(set(a) | set(b)) >= 0.5


def quotes(item: Mapping[str, Any], answer: str) -> list[str]:
    """What of `item` the answer repeats: a code name of it, or enough of its content words."""
    said = answer.lower()
    names = [n for n in _CODE.findall(_text(item)) if len(n) >= 4 and n.lower() in said]
    if names:
        return list(dict.fromkeys(names))[:3]
    mine = _words(item)
    heard = set(content_words(answer))
    shared = [w for w in mine if w in heard]
    gist = list(dict.fromkeys(content_words(str(item.get("title") or ""))))
    said_gist = [w for w in gist if w in heard]
    if len(shared) >= QUOTED_WORDS and (
        len(shared) >= QUOTED_SHARE * len(mine) or len(said_gist) >= GIST_SHARE * len(gist)
    ):
        return shared[:5]
    return []


def _words(item: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(content_words(_text(item))))[:ITEM_WORDS]


def _text(item: Mapping[str, Any]) -> str:
    return f"{item.get('title') or ''}\n{item.get('body') or ''}"


def _squash(command: str) -> str:
    return " ".join(command.split())


def _short(text: str) -> str:
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 1] + "…"
