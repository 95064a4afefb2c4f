"""A conservative token estimator: budgets are in tokens, and an estimate must never undercount.

Calibrated against a WordPiece subword tokenizer (MiniLM's) on prose and on source code (see
tests/test_retrieval_tokens.py): ASCII letter runs cost one token per two letters (rounded up;
one per three undercounts identifiers such as `netloc`), every digit, symbol and non-ASCII
character costs one. Prose comes out at about twice the real count, code at about 1.6x.
"""

from __future__ import annotations

import re

_PIECE = re.compile(r"[A-Za-z]+|[^\sA-Za-z]")


def estimate_tokens(text: str) -> int:
    total = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        size = len(piece)
        total += (size + 1) // 2 if size > 1 else 1
    return total


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of `text` (cut at a word boundary, with an ellipsis) within `budget`."""
    if estimate_tokens(text) <= budget:
        return text
    if budget <= 1:
        return ""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid].rstrip() + "…") <= budget:
            low = mid
        else:
            high = mid - 1
    cut = text[:low]
    space = cut.rfind(" ")
    if space > low // 2:
        cut = cut[:space]
    cut = cut.rstrip()
    return cut + "…" if cut else ""
