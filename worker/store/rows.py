"""Row <-> API dict conversion shared by the query modules."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from worker.clock import to_iso


def dump_json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def load_json(text: str | None, default: Any = None) -> Any:
    if text is None or text == "":
        return default
    return json.loads(text)


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:32]


def normalised_hash(text: str) -> str:
    """Hash of text normalised for case and whitespace (write-time de-duplication)."""
    return content_hash(" ".join(text.lower().split()))


def iso(row: sqlite3.Row | Mapping[str, Any], key: str) -> str | None:
    value = row[key]
    return to_iso(int(value)) if value is not None else None


# Rows per multi-row INSERT statement (12 columns x 256 stays far below SQLite's 32766
# bound parameters).
VALUES_CHUNK = 256


def insert_values(
    conn: sqlite3.Connection,
    head: str,
    template: str,
    rows: list[tuple[Any, ...]],
    tail: str = "",
) -> None:
    """`head VALUES template, template, ... tail` over `rows`: one statement per chunk of
    rows rather than one per row (each statement is a trip into SQLite that releases and
    retakes the GIL; executemany makes one per row)."""
    for start in range(0, len(rows), VALUES_CHUNK):
        chunk = rows[start : start + VALUES_CHUNK]
        conn.execute(
            f"{head} VALUES {','.join([template] * len(chunk))} {tail}",
            [value for row in chunk for value in row],
        )


def placeholders(n: int) -> str:
    return ",".join("?" * n)


def by_ids(
    conn: sqlite3.Connection,
    select: str,
    id_column: str,
    ids: list[int],
    convert: Callable[[sqlite3.Row], dict[str, Any]],
) -> list[dict[str, Any]]:
    """Rows of `select` (a SELECT ... FROM ... without WHERE) whose `id_column` is in `ids`,
    converted, in the order of `ids`; missing ids are skipped. Ids travel as one JSON array,
    so there is no bound-parameter limit."""
    if not ids:
        return []
    rows = conn.execute(
        f"{select} WHERE {id_column} IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
    ).fetchall()
    found = {r["id"]: convert(r) for r in rows}
    return [found[i] for i in ids if i in found]
