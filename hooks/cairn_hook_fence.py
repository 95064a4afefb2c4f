"""The context fence: what Cairn injects sits between `<cairn-context>` and `</cairn-context>`,
and nothing that came from stored text may open or close it.

This file is the one rule. The hook applies it where it wraps the block, and the worker loads
this same file (worker/fence.py) for every text it renders as context, so the two cannot drift.

A fence marker is `<`, up to three characters that are not letters, digits or `<` (`/`, `\\/`,
`!`...), `cairn`, up to three such characters, then `context`, found in a normalised view of
the text: whitespace, control and format characters (zero-width space, soft hyphen...)
dropped, NFKC (the fullwidth less-than U+FF1C is `<`), HTML character references decoded
until none is left (`&lt;`, `&#x3C;`, `&amp;lt;` are `<`), case folded. `neutralise` turns the
`<` of every marker, however it was spelled, into `[` (and a `>` right after the name into
`]`) until no marker is left; text without a marker comes back unchanged.
"""

from __future__ import annotations

CONTEXT_OPEN = "<cairn-context>"
CONTEXT_CLOSE = "</cairn-context>"
MARKER = r"<[^a-z0-9<]{0,3}cairn[^a-z0-9<]{0,3}context"
OPEN_BRACKET = "["
CLOSE_BRACKET = "]"
# Texts longer than this are split (at a line end) before the exact view is taken.
LEAF_CHARS = 512
# Decoding passes before a text counts as hostile (each pass peels one level of `&amp;`).
MAX_PASSES = 64
# Html's own character-reference pattern, so decoding a match alone gives what html.unescape
# gives for the whole text.
_CHARREF = r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)"
# ASCII characters the view drops: controls, space and DEL.
_ASCII_DROP = dict.fromkeys([*range(33), 127])
_REFERENCE_SIGNS = dict.fromkeys(map(ord, "&#;"))
_compiled: dict[str, object] = {}


def _regex(pattern: str):  # type: ignore[no-untyped-def]
    compiled = _compiled.get(pattern)
    if compiled is None:
        import re

        compiled = _compiled[pattern] = re.compile(pattern)
    return compiled


def _ignorable(ch: str) -> bool:
    """Characters a reader does not see: whitespace, controls, format characters."""
    import unicodedata

    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf")


def _visible(ch: str) -> bool:
    return ord(ch) > 32 and ch != "\x7f" if ch.isascii() else not _ignorable(ch)


def _decode_pass(
    chars: list[str], spans: list[tuple[int, int]]
) -> tuple[list[str], list[tuple[int, int]]]:
    """One pass: drop invisible characters, NFKC, decode character references.

    NFKC runs on each character with the combining marks after it (`<` + U+0338 is `≮`, not a
    `<`); every character of the result keeps the span of source text it came from."""
    import html
    import unicodedata

    visible = [(ch, span) for ch, span in zip(chars, spans, strict=True) if _visible(ch)]
    kept: list[str] = []
    kept_spans: list[tuple[int, int]] = []
    i = 0
    while i < len(visible):
        ch, span = visible[i]
        j = i + 1
        while j < len(visible) and unicodedata.combining(visible[j][0]):
            j += 1
        if j == i + 1 and ch.isascii():
            kept.append(ch)
            kept_spans.append(span)
        else:
            group = (span[0], visible[j - 1][1][1])
            for part in unicodedata.normalize("NFKC", "".join(c for c, _ in visible[i:j])):
                if not _ignorable(part):
                    kept.append(part)
                    kept_spans.append(group)
        i = j
    joined = "".join(kept)
    if "&" not in joined:
        return kept, kept_spans
    out: list[str] = []
    out_spans: list[tuple[int, int]] = []
    pos = 0
    for match in _regex(_CHARREF).finditer(joined):  # type: ignore[attr-defined]
        raw = match.group()
        decoded = html.unescape(raw)
        if decoded == raw:
            continue
        start, end = match.span()
        # `&ltfoo` decodes to `<foo`: the undecoded tail keeps its own spans.
        tail = 0
        while (
            tail < len(decoded) - 1 and tail < len(raw) - 2 and decoded[-1 - tail] == raw[-1 - tail]
        ):
            tail += 1
        out += kept[pos:start]
        out_spans += kept_spans[pos:start]
        head_span = (kept_spans[start][0], kept_spans[end - tail - 1][1])
        out += decoded[: len(decoded) - tail]
        out_spans += [head_span] * (len(decoded) - tail)
        out += kept[end - tail : end]
        out_spans += kept_spans[end - tail : end]
        pos = end
    out += kept[pos:]
    out_spans += kept_spans[pos:]
    return out, out_spans


def view(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """The normalised view and, per view character, its source span (None: too deeply encoded)."""
    chars = list(text)
    spans = [(i, i + 1) for i in range(len(text))]
    for _ in range(MAX_PASSES):
        new_chars, new_spans = _decode_pass(chars, spans)
        if new_chars == chars:
            break
        chars, spans = new_chars, new_spans
    else:
        return None
    folded: list[str] = []
    folded_spans: list[tuple[int, int]] = []
    for ch, span in zip(chars, spans, strict=True):
        for part in ch.casefold():
            folded.append(part)
            folded_spans.append(span)
    return "".join(folded), folded_spans


def _may_hold_marker(text: str) -> bool:
    """False only when `text` certainly holds no marker; fast (C-level string passes).

    Plain ASCII without `&` is tested exactly. Anything else is tested on a coarser view that
    keeps only `a-z0-9<&#;` before decoding references: it finds every marker the real view
    finds (dropping more characters only joins more), so a miss here is a miss there."""
    if text.isascii() and "&" not in text:
        if "<" not in text:
            return False
        return _regex(MARKER).search(text.translate(_ASCII_DROP).lower()) is not None  # type: ignore[attr-defined]
    import html
    import unicodedata

    coarse = _regex(r"[^a-z0-9<&#;]+")

    def squeeze(value: str) -> str:
        return coarse.sub("", unicodedata.normalize("NFKC", value).casefold())  # type: ignore[attr-defined,no-any-return]

    text = squeeze(text)
    for _ in range(MAX_PASSES):
        if "<cairncontext" in text.translate(_REFERENCE_SIGNS):
            return True
        decoded = squeeze(html.unescape(text))
        if decoded == text:
            return False
        text = decoded
    return True


def _flatten(text: str) -> str:
    """For text encoded deeper than any reader decodes: keep the words, lose every way to
    spell `<` (no `<`, no `&`, nothing outside ASCII)."""
    safe = "".join(ch if ch.isascii() else "?" for ch in text)
    return safe.replace("<", OPEN_BRACKET).replace("&", "+")


def _neutralise_once(text: str) -> str | None:
    """Brackets for the markers found in one view of `text`; None when there is none."""
    seen = view(text)
    if seen is None:
        return _flatten(text)
    normal, spans = seen
    edits: dict[int, tuple[int, str]] = {}
    for match in _regex(MARKER).finditer(normal):  # type: ignore[attr-defined]
        start, end = spans[match.start()]
        edits[start] = (end, OPEN_BRACKET)
        after = match.end()
        if after < len(normal) and normal[after] == ">":
            close_start, close_end = spans[after]
            if close_start >= end:
                edits[close_start] = (close_end, CLOSE_BRACKET)
    if not edits:
        return None
    out: list[str] = []
    pos = 0
    for start in sorted(edits):
        end, replacement = edits[start]
        if start < pos:
            continue  # inside a span already replaced
        out.append(text[pos:start])
        out.append(replacement)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def neutralise(text: str) -> str:
    """`text` with no fence marker left (unchanged when it had none)."""
    if not text or not _may_hold_marker(text):
        return text
    if len(text) > LEAF_CHARS:
        # The exact view costs ~20 us a character: take it only on the pieces that may hold
        # a marker, then once on the whole if one spans two pieces.
        cut = text.rfind("\n", 0, len(text) // 2) + 1 or len(text) // 2
        text = neutralise(text[:cut]) + neutralise(text[cut:])
        if not _may_hold_marker(text):
            return text
    for _ in range(MAX_PASSES):
        changed = _neutralise_once(text)
        if changed is None:
            return text
        text = changed
    return _flatten(text)


def markers(text: str) -> list[str]:
    """The fence markers in `text` as they read in the view (tests count a block's fences)."""
    seen = view(text)
    if seen is None:
        return ["<"]
    return [m.group() for m in _regex(MARKER).finditer(seen[0])]  # type: ignore[attr-defined]
