"""Who reads a private kind of row: on a team database, prompts and tool observations are private
to their author unless shared (they may hold half-finished thoughts and paths; issue 22).

Such a row has an `author` and a `shared` flag (0/1). A read that serves a person names them
(`visible_to`); it then sees the rows shared with the team and the rows they wrote. A row with no
author (stored before authors were recorded) is nobody's: it shows only if shared. A read that
names nobody sees every row, as a single-user store always has.
"""

from __future__ import annotations


def shared_or_by(alias: str, author: str) -> tuple[str, tuple[object, ...]]:
    """A WHERE term (and its parameters): the rows of `alias` shared, or written by `author`."""
    return f"({alias}.shared = 1 OR {alias}.author = ?)", (author,)
