"""Relations between stored memories: their kinds, and the update chain a memory is part of.

Whether a new memory updates an older one is decided in worker/memory/supersession.py.
"""

from __future__ import annotations

RELATION_KINDS = ("updates", "extends", "derives")


def chain(
    start: int, superseded_by: dict[int, int | None], supersedes: dict[int, int]
) -> list[int]:
    """The update chain through `start`, oldest first (cycle-safe).

    `superseded_by` maps a memory to its newer version; `supersedes` maps it to its older one.
    """
    older: list[int] = []
    seen = {start}
    node = start
    while node in supersedes and supersedes[node] not in seen:
        node = supersedes[node]
        seen.add(node)
        older.append(node)
    newer: list[int] = []
    node = start
    while (nxt := superseded_by.get(node)) is not None and nxt not in seen:
        seen.add(nxt)
        newer.append(nxt)
        node = nxt
    return [*reversed(older), start, *newer]
