"""Rules text in files the user also edits: a marked block we add, replace or remove.

The block is whole lines from BEGIN to END; removing it restores the file exactly when the file
ended with a newline before the block was added (otherwise only that final newline stays).
"""

from __future__ import annotations

import re

BEGIN = "<!-- cairn:begin (written by `cairn install`; `cairn uninstall` removes it) -->"
END = "<!-- cairn:end -->"
MANAGED = "<!-- cairn:managed (written by `cairn install`; `cairn uninstall` deletes this file) -->"

_BLOCK = re.compile(r"^<!-- cairn:begin[^\n]*-->\n.*?^<!-- cairn:end -->(?:\n|$)", re.S | re.M)


def render_block(body: str) -> str:
    return f"{BEGIN}\n{body.strip()}\n{END}\n"


def has_block(text: str | None) -> bool:
    return text is not None and _BLOCK.search(text) is not None


def set_block(text: str | None, body: str) -> str:
    """`text` with Cairn's block holding `body`: the old block replaced in place, or appended."""
    block = render_block(body)
    current = text or ""
    if _BLOCK.search(current):
        return _BLOCK.sub(lambda _m: block, current, count=1)
    if current and not current.endswith("\n"):
        current += "\n"
    return current + block


def remove_block(text: str) -> str:
    return _BLOCK.sub("", text, count=1)


def is_managed(text: str | None) -> bool:
    return text is not None and MANAGED in text
