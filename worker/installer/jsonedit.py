"""Change a JSON document's text to hold new data, rewriting only the values that differ.

Members and items that did not change keep their exact text (a compact array stays compact, odd
spacing stays odd); new ones are written in the style around them: one per line at the siblings'
indentation in a multi-line container, inline in a single-line one. So removing exactly what an
install added gives back the original bytes.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

_WS = re.compile(r"[ \t\n\r]*")
_BLANKS = re.compile(r"[ \t]*")
_DECODER = json.JSONDecoder()
_UNIT = re.compile(r"^[\[{][^\n]*\n([ \t]+)\S", re.S)
_KEY_SEP = re.compile(r'"\s*(:[ \t]*)(?=\S)')
_INLINE_SEP = re.compile(r",([ \t]*)(?=[\"\[{\w-])")


class _Unsupported(Exception):
    """A container this editor does not rewrite in place (duplicate keys)."""


@dataclass(frozen=True)
class _Style:
    unit: str  # one indentation level
    newline: str
    key_sep: str  # between a key and its value
    item_sep: str  # between members of a single-line container
    ascii_only: bool
    multiline: bool  # how to lay out a container that was empty

    @classmethod
    def of(cls, text: str) -> _Style:
        unit = "  "
        match = _UNIT.match(text.lstrip())
        if match:
            unit = match.group(1)
        key_sep = _KEY_SEP.search(text)
        item_sep = _INLINE_SEP.search(text)
        root = text.strip()
        return cls(
            unit=unit,
            newline="\r\n" if "\r\n" in text else "\n",
            key_sep=key_sep.group(1) if key_sep else ": ",
            item_sep="," + (item_sep.group(1) if item_sep else " "),
            ascii_only=text.isascii(),
            # Only a file that is all on one line (minified) gets new containers inline.
            multiline="\n" in root or root in ("{}", "[]"),
        )

    def render(self, value: Any, indent: str, multiline: bool) -> str:
        if not multiline:
            return json.dumps(
                value, ensure_ascii=self.ascii_only, separators=(self.item_sep, self.key_sep)
            )
        text = json.dumps(
            value, ensure_ascii=self.ascii_only, indent=self.unit, separators=(",", self.key_sep)
        )
        return text.replace("\n", self.newline + indent)


@dataclass(frozen=True)
class _Entry:
    """One member (key_start < value_start) or item (key_start == value_start) of a container."""

    key: str | None
    key_start: int
    value_start: int
    value_end: int
    value: Any


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _entries(text: str, start: int) -> tuple[list[_Entry], int]:
    """The entries of the object or array opening at `start`, and the index after it closes."""
    is_object = text[start] == "{"
    close = "}" if is_object else "]"
    entries: list[_Entry] = []
    pos = _skip(text, start + 1)
    if text[pos] == close:
        return entries, pos + 1
    while True:
        key: str | None = None
        key_start = pos
        if is_object:
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, pos)
            pos = _skip(text, pos + 1)  # the colon
        value, end = _DECODER.raw_decode(text, pos)
        entries.append(_Entry(key, key_start, pos, end, value))
        pos = _skip(text, end)
        if text[pos] == close:
            return entries, pos + 1
        pos = _skip(text, pos + 1)  # the comma


def _same(a: Any, b: Any) -> bool:
    # Python's == says 1 == 1.0 == True; the file must change when the JSON does.
    return a == b and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _line_indent(text: str, pos: int) -> str:
    line = text.rfind("\n", 0, pos) + 1
    match = _BLANKS.match(text, line)
    return match.group(0) if match else ""


class _Editor:
    def __init__(self, text: str) -> None:
        self.text = text
        self.style = _Style.of(text)

    def value(self, start: int, end: int, old: Any, new: Any, multiline: bool) -> str:
        if _same(old, new):
            return self.text[start:end]
        both = (type(old), type(new))
        try:
            if both == (dict, dict) or both == (list, list):
                return self.container(start, new)[0]
        except _Unsupported:
            pass
        return self.style.render(new, _line_indent(self.text, start), multiline)

    def container(self, start: int, new: dict[str, Any] | list[Any]) -> tuple[str, int]:
        """The new text of the container opening at `start`, and where its old text ends."""
        text, style = self.text, self.style
        old, end = _entries(text, start)
        inner_text = text[start:end]
        if old:
            multiline = "\n" in inner_text
            before = text[start + 1 : old[0].key_start]
            after = text[old[-1].value_end : end - 1]
        else:  # `[ ]` stays inline with its space; `{}` takes the file's layout
            before, after = inner_text[1:-1], ""
            multiline = "\n" in before if before else style.multiline
        outer = _line_indent(text, start)
        inner = _line_indent(text, old[0].key_start) if old and multiline else outer + style.unit
        if old and multiline and not text[: old[0].key_start].rstrip(" \t").endswith("\n"):
            inner = outer + style.unit  # the first entry shares the bracket's line
        pieces = self._pieces(old, new, inner, multiline)
        if not pieces:  # emptied: keep spacing like `[ ]`, but no lines of an empty container
            space = before + after
            return inner_text[0] + ("" if "\n" in space else space) + inner_text[-1], end
        seps = [text[a.value_end : b.key_start] for a, b in itertools.pairwise(old)]
        if not old and multiline:
            before, after = style.newline + inner, style.newline + outer
        fallback = (
            seps[-1] if seps else ("," + style.newline + inner if multiline else style.item_sep)
        )
        # Between two entries: the separator that followed the first one, when it had one.
        following: dict[int | None, str] = dict(enumerate(seps))
        out = [inner_text[0], before, pieces[0][1]]
        for (previous, _), (_, piece) in itertools.pairwise(pieces):
            out += [following.get(previous, fallback), piece]
        out += [after, inner_text[-1]]
        return "".join(out), end

    def _pieces(
        self, old: list[_Entry], new: dict[str, Any] | list[Any], inner: str, multiline: bool
    ) -> list[tuple[int | None, str]]:
        """(index of the old entry it came from or None, text) for each entry of `new`."""
        text, style = self.text, self.style

        def kept(i: int, value: Any) -> tuple[int, str]:
            entry = old[i]
            head = text[entry.key_start : entry.value_start]
            body = self.value(entry.value_start, entry.value_end, entry.value, value, multiline)
            return i, head + body

        def added(value: Any, key: str | None = None) -> tuple[None, str]:
            body = style.render(value, inner, multiline)
            if key is None:
                return None, body
            return None, json.dumps(key, ensure_ascii=style.ascii_only) + style.key_sep + body

        if isinstance(new, dict):
            index = {e.key: i for i, e in enumerate(old)}
            if len(index) != len(old):
                raise _Unsupported("duplicate keys")
            return [kept(index[k], v) if k in index else added(v, k) for k, v in new.items()]
        pieces: list[tuple[int | None, str]] = []
        canonical = [json.dumps(e.value, sort_keys=True) for e in old]
        wanted = [json.dumps(v, sort_keys=True) for v in new]
        matcher = difflib.SequenceMatcher(None, canonical, wanted, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
                pieces += [
                    kept(i, new[j]) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                ]
            elif op != "delete":
                pieces += [added(v) for v in new[j1:j2]]
        return pieces


def edit(text: str, new: dict[str, Any]) -> str:
    """`text`, a JSON object document, changed to hold `new` with the fewest rewritten bytes."""
    start = _skip(text, 0)
    editor = _Editor(text)
    try:
        body, end = editor.container(start, new)
    except _Unsupported:
        end = _DECODER.raw_decode(text, start)[1]
        body = editor.style.render(new, "", editor.style.multiline)
    return text[:start] + body + text[end:]
