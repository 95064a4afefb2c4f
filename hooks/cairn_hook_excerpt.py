"""What a capped field keeps of a text longer than its cap.

- `head`, `tail`, `head_tail`: the first / last characters (command output is read at both ends).
- `output`: a command's output keeps, between its head and its tail, the lines that say what
  failed. A build or test log opens with a banner and progress and closes with a summary; the
  error a later prompt describes ("the catalog class", "violates the disruption budget") sits
  in between, where a plain head and tail cut it out.
- `edit`: an edit's old and new text keep the lines it changed. The text an agent sends with an
  edit repeats the unchanged lines around the change; past the cap those crowd out the change.

Stdlib only, no `re`: every tool event of every agent goes through here.
"""

from __future__ import annotations

from cairn_hook_privacy import clean, strip_private

REDACT_MARGIN = 200  # redact a little past the cap so a secret cut in half is still caught
ELLIPSIS = "…"

# Lower-cased words that mark a line reporting a failure: an error or exception (any
# `...Error` / `...Exception` class too), a failed test or check, an impossibility ("cannot",
# "unable to", "not found"), a refusal, a crash. Past the cap such a line is worth more than
# the progress around it.
FAILURE_WORDS = (
    "error",
    "exception",
    "fail",
    "fatal",
    "panic",
    "cannot",
    "can't",
    "could not",
    "couldn't",
    "unable to",
    "not found",
    "no such",
    "undefined",
    "unresolved",
    "denied",
    "refused",
    "mismatch",
    "violat",
    "invalid",
    "missing",
    "timed out",
    "abort",
    "segmentation fault",
    "killed",
    "assert",
)
# The characters of a long output searched for failure lines: its last ones. Claude Code hands a
# hook at most 30,000 of a command's output (BASH_MAX_OUTPUT_LENGTH) unless told otherwise.
SCAN_CHARS = 50_000
# A line reporting a failure often ends on the next one ("This happened because ...",
# "Caused by: ..."): each failure line brings the line after it when that one has words.
FOLLOWING_LINES = 1
# Past this many lines an edit is cut as it is, not diffed (a diff's cost grows with both sizes).
DIFF_LINES = 1_000


def head(text: str, limit: int) -> str:
    """Cleaned first `limit` characters (with an ellipsis when cut)."""
    if not text:
        return ""
    text = strip_private(text)  # whole text first: a block may open outside the window
    cut = len(text) > limit
    text = clean(text[: limit + REDACT_MARGIN])
    if len(text) > limit:
        cut = True
        text = text[:limit]
    return text.rstrip() + (f" {ELLIPSIS}" if cut else "")


def tail(text: str, limit: int) -> str:
    """Cleaned last `limit` characters (with an ellipsis when cut)."""
    if not text:
        return ""
    text = strip_private(text)
    cut = len(text) > limit
    text = clean(text[-(limit + REDACT_MARGIN) :])
    if len(text) > limit:
        cut = True
        text = text[-limit:]
    return (f"{ELLIPSIS} " if cut else "") + text.strip()


def head_tail(text: str, limit: int) -> str:
    """Head and tail of a long output (command results are read at both ends)."""
    if len(text) <= limit:
        return head(text, limit)
    half = limit // 2
    return head(text, half) + f"\n{ELLIPSIS}\n" + tail(text, half)


def reports_failure(line: str) -> bool:
    """True for a line that says something failed (see FAILURE_WORDS); pytest's `E   ` lines."""
    if line.startswith("E  "):
        return True
    lowered = line.lower()
    return any(word in lowered for word in FAILURE_WORDS)


def _has_words(line: str) -> bool:
    """At least two words of two letters or more: not a blank, a rule or a bare log prefix."""
    words = 0
    for token in line.split():
        if sum(ch.isalpha() for ch in token) >= 2:
            words += 1
            if words >= 2:
                return True
    return False


_DECORATION = "=-_.*#~─═"
_DIGITS = str.maketrans("0123456789", "##########")


def _compact(line: str) -> str:
    """A line with its whitespace runs folded and decoration runs (`=====`, `.....`) cut to 3."""
    line = " ".join(line.split())
    for ch in _DECORATION:
        while ch * 4 in line:
            line = line.replace(ch * 4, ch * 3)
    return line


def _key(line: str) -> str:
    """Lines that differ only in numbers (a retry, a pod's hash, a timestamp) say one thing."""
    key = line.lower().translate(_DIGITS)
    while "##" in key:
        key = key.replace("##", "#")
    return key


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 2].rstrip() + f" {ELLIPSIS}"


def _shared_prefix(lines: list[str]) -> int:
    """The length of the prefix every one of `lines` repeats (a CI log's job and step, a
    container's name), back to its last space or bar: 0 when under 8 characters."""
    filled = [line for line in lines if line.strip()]
    if not filled:
        return 0
    low, high = min(filled), max(filled)  # what these two share, every line between shares
    size = next((i for i, (a, b) in enumerate(zip(low, high, strict=False)) if a != b), len(low))
    prefix = low[:size]
    end = max(prefix.rfind(sep) for sep in (" ", "\t", "|", "│")) + 1
    return end if end >= 8 else 0


def failure_lines(lines: list[str], budget: int, line_chars: int, following: int = 0) -> list[str]:
    """The `lines` that report a failure (each with the line after it), in order, once each,
    each cut to `line_chars`, within `budget` characters together; a prefix they all repeat
    is said once, not on each. `following`: lines to take first whatever they say (the line
    before these reported a failure)."""
    picked: list[str] = []
    seen: set[str] = set()
    used = 0
    wanted = following  # following lines still to take
    cut = _shared_prefix(lines) if len(lines) > 1 else 0
    lines = [line[cut:] for line in lines]
    for raw in lines:
        failure = reports_failure(raw)
        if not failure and not (wanted and _has_words(raw)):
            continue
        wanted = FOLLOWING_LINES if failure else wanted - 1
        line = _compact(raw)
        key = _key(line)
        if not line or key in seen:
            continue
        seen.add(key)
        line = _cut(line, min(line_chars, budget - used))
        if budget - used < 40:
            break
        picked.append(line)
        used += len(line) + 1
    return picked


def _fitting(lines: list[str], budget: int) -> int:
    """How many of `lines` fit in `budget` characters (at least one)."""
    used = 0
    for count, line in enumerate(lines):
        used += len(line) + 1
        if used > budget:
            return max(count, 1)
    return len(lines)


def output(text: str, limit: int) -> str:
    """A command output: whole within `limit` characters. Longer, its first and last lines
    (`limit` / 2 each, as head_tail) and, between them, the lines that report a failure with
    room of their own (up to 2 x `limit` more); whole when that is no longer."""
    if len(text) <= limit:
        return head(text, limit)
    text = strip_private(text)
    if len(text) > SCAN_CHARS:  # its start, then as much of its end as is searched
        text = text[:limit] + "\n" + text[-SCAN_CHARS:]
    lines = clean(text).splitlines()
    half = limit // 2
    first = _fitting(lines, half)
    last = _fitting(lines[::-1], half)
    middle = lines[first : len(lines) - last]
    # A failed build or test names its failure in a handful of lines (an exception and its
    # cause, a few failed tests) of ~100-150 characters: they get twice the field's room.
    following = FOLLOWING_LINES if first and reports_failure(lines[first - 1]) else 0
    picked = failure_lines(middle, 2 * limit, half, following)
    if not picked:
        return head_tail(text, limit)
    if len(text) <= 3 * limit:
        return head(text, 3 * limit)
    start = [_cut(line, half) for line in lines[:first]]
    end = [_cut(line, half) for line in lines[len(lines) - last :]]
    return "\n".join([*start, ELLIPSIS, *picked, ELLIPSIS, *end])


def _changed(text: str, other: str) -> str:
    """`text` with each run of two or more lines it shares with `other` (in order) as `…`."""
    import difflib

    lines = text.splitlines()
    matcher = difflib.SequenceMatcher(None, lines, other.splitlines(), autojunk=False)
    out: list[str] = []
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag == "equal" and i2 - i1 >= 2:
            out.append(ELLIPSIS)
        else:
            out.extend(lines[i1:i2])
    return "\n".join(out)


def edit(old: str, new: str, limit: int) -> tuple[str, str]:
    """An edit's old and new text within 2 x `limit` characters together.

    Whole when both fit their `limit`. Else the lines the two share are elided (`…`) in both,
    and the new text, what the code now says, gets the room the old one leaves."""
    if len(old) <= limit and len(new) <= limit:
        return head(old, limit), head(new, limit)
    old, new = strip_private(old), strip_private(new)
    if old and new and max(old.count("\n"), new.count("\n")) < DIFF_LINES:
        old, new = _changed(old, new), _changed(new, old)
    old_room = min(len(old), limit)
    return head(old, old_room), head(new, 2 * limit - old_room)
