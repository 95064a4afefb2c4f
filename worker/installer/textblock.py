"""Text in files the user also edits: a marked block we add, replace or remove.

The block is whole lines from BEGIN to END; removing it restores the file exactly when the file
ended with a newline before the block was added (otherwise only that final newline stays).
Markdown rules files mark it with HTML comments; TOML files (Codex CLI's config.toml) with `#`
comments (`comment="#"`).
"""

from __future__ import annotations

import re

BEGIN = "<!-- cairn:begin (written by `cairn install`; `cairn uninstall` removes it) -->"
END = "<!-- cairn:end -->"
MANAGED = "<!-- cairn:managed (written by `cairn install`; `cairn uninstall` deletes this file) -->"

_BLOCK = re.compile(r"^<!-- cairn:begin[^\n]*-->\n.*?^<!-- cairn:end -->(?:\n|$)", re.S | re.M)
HASH_BEGIN = "# cairn:begin (written by `cairn install`; `cairn uninstall` removes it)"
HASH_END = "# cairn:end"
_HASH_BLOCK = re.compile(r"^# cairn:begin[^\n]*\n.*?^# cairn:end[ \t]*(?:\n|$)", re.S | re.M)


def _markers(comment: str) -> tuple[str, str, re.Pattern[str]]:
    return (HASH_BEGIN, HASH_END, _HASH_BLOCK) if comment == "#" else (BEGIN, END, _BLOCK)


def render_block(body: str, comment: str = "html") -> str:
    begin, end, _ = _markers(comment)
    return f"{begin}\n{body.strip()}\n{end}\n"


def has_block(text: str | None, comment: str = "html") -> bool:
    return text is not None and _markers(comment)[2].search(text) is not None


def set_block(text: str | None, body: str, comment: str = "html") -> str:
    """`text` with Cairn's block holding `body`: the old block replaced in place, or appended."""
    block = render_block(body, comment)
    pattern = _markers(comment)[2]
    current = text or ""
    if pattern.search(current):
        return pattern.sub(lambda _m: block, current, count=1)
    if current and not current.endswith("\n"):
        current += "\n"
    return current + block


def remove_block(text: str, comment: str = "html") -> str:
    return _markers(comment)[2].sub("", text, count=1)


def is_managed(text: str | None) -> bool:
    return text is not None and MANAGED in text
