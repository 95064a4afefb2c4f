"""An item's keyword-index terms, as SQLite's index triggers analyse them (m002: `cairn_terms`,
`cairn_new_terms`): its title's terms and its body's, space-separated (worker/terms.py).

SQLite stores them in `search_index`; PostgreSQL cannot run worker/terms.py, so there the writer
stores them beside the item (`index_title`, `index_body`, migration 6) and the reader of an
older row analyses it here (store/index_rows.py): both backends hold the same terms.
"""

from __future__ import annotations

from typing import Any

from worker.terms import index_text, new_terms

# kind -> (table, title columns, body columns): SQLite's m002 SOURCES, column for column.
# A memory's tag words its content lacks follow its content (`cairn_new_terms`).
ANALYSED: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "observation": ("observations", ("title",), ("body", "files")),
    "memory": ("memories", (), ("content", "tags")),
    "prompt": ("prompts", (), ("text",)),
    "summary": ("summaries", ("request",), ("completed", "learned", "next_steps", "files")),
}


def analyse(kind: str, values: tuple[Any, ...]) -> tuple[str, str]:
    """(title terms, body terms) of a `kind` item from its ANALYSED columns' values, in order."""
    _table, title, _body = ANALYSED[kind]
    heads, rest = values[: len(title)], values[len(title) :]
    if kind == "memory":
        content, tags = rest
        return "", f"{index_text(content)} {' '.join(new_terms(tags, content or ''))}"
    return index_text(*heads), index_text(*rest)
