"""Lines of injected context that earn their tokens: each statement once, labels once, and the
line of a failure that says what failed rather than the tool's banner."""

from __future__ import annotations

import re

# Labels the context's own sections put before a statement ("Task: ...", "Completed: ...").
_LABEL_RE = re.compile(
    r"^(?:[-*]\s+)?(?:\*\*)?(?:task|current task|progress|next|next steps?|completed|done|"
    r"learned|last session asked|asked|in progress|continue|open questions?|files in flight|"
    r"files changed|most edited)(?:\*\*)?\s*:\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_NOISE_RE = re.compile(r"[`*_\"'.,;:!()\[\]]")


def statement_key(text: str) -> str:
    """What a line says, without its label, markup, case or punctuation."""
    text = text.strip()
    while True:
        stripped = _LABEL_RE.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return " ".join(_NOISE_RE.sub(" ", text.lower()).split())


def unlabel(text: str) -> str:
    """`Next step: run it` -> `run it`: under a `Next:` label the item's own label repeats it."""
    stripped = _LABEL_RE.sub("", text.strip(), count=1)
    return stripped or text.strip()


class Said:
    """The statements already in the context; a later section drops what an earlier one said."""

    def __init__(self) -> None:
        self._keys: set[str] = set()

    def new(self, text: str) -> bool:
        """True the first time a statement appears (and remembers it); empty text is never new."""
        key = statement_key(text)
        if not key or key in self._keys:
            return False
        self._keys.add(key)
        return True

    def note(self, text: str) -> None:
        key = statement_key(text)
        if key:
            self._keys.add(key)


# Lines that say what failed: assertion messages, error lines, test-runner failure summaries.
_FAILURE_LINE_RE = re.compile(
    r"(?:^E\s{2,}|(?-i:\bFAIL(?:ED)?\b)|^ERROR\b|\bError\b|\bError:|\bException\b|\bassert(?:ion)?\b|"
    r"\bfailed\b|\bpanicked\b|^error(?:\[\w+\])?:|\bnot found\b|\bundefined\b|\bcannot\b|"
    # An exception named in CamelCase (IntegrityError, _ArrayMemoryError), a database's DETAIL
    # line, a Go panic or data race (`go test` also says `--- FAIL:` and `FAIL <package>`).
    r"(?-i:[a-z_](?:Error|Exception))\b|^DETAIL:|^panic:|\bDATA RACE\b)",
    re.IGNORECASE,
)
_BANNER_RE = re.compile(
    r"^(?:=+|-+|_+)\s.*\s(?:=+|-+|_+)$|^(?:platform|rootdir|plugins|collected)\b|"
    # Python's chained-traceback glue says that something failed, not what.
    r"^(?:Traceback \(most recent call last\)|The above exception was the direct cause|"
    r"During handling of the above exception)"
)


def failure_excerpt(body: str, max_lines: int = 3) -> str:
    """The lines of a failed command's output that say what failed, last ones first kept.

    Test runners print a banner first and the failure at the end; a plain head of the output
    shows the banner. Returns '' when no line looks like a failure.
    """
    picked: list[str] = []
    for raw in body.splitlines():
        line = raw.strip()
        if ":" in line[:12] and line.split(":", 1)[0] in ("command", "exit code"):
            continue  # the observation's own fields, already in its title
        for prefix in ("stdout: ", "stderr: ", "error: "):
            if line.startswith(prefix):
                line = line[len(prefix) :].strip()
        if not line or _BANNER_RE.match(line) or not _FAILURE_LINE_RE.search(line):
            continue
        if line not in picked:
            picked.append(line)
    return " | ".join(picked[-max_lines:])


_SECTION_RE = re.compile(r"^([A-Z][A-Za-z ]{1,30}):\s*(.*)$")


def labelled_items(text: str) -> list[tuple[str, list[str]]]:
    """`Label: a` lines with their continuation lines, as (label, items) in order."""
    sections: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _SECTION_RE.match(line)
        if match or not sections:
            label, first = (match.group(1), match.group(2)) if match else ("", line)
            sections.append((label, [first] if first.strip() else []))
        else:
            sections[-1][1].append(line)
    return sections


def fresh_lines(sections: list[tuple[str, list[str]]], said: Said) -> list[str]:
    """One `Label: a; b` line per section, with only what the context has not said yet."""
    lines = []
    for label, items in sections:
        if label.lower().startswith("next"):
            items = [unlabel(item) for item in items]
        kept = [item for item in items if said.new(item)]
        if kept:
            lines.append(f"{label}: {'; '.join(kept)}" if label else "; ".join(kept))
    return lines
