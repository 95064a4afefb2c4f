"""Row <-> API dict conversion shared by the query modules."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from worker.clock import to_iso
from worker.store.db import AnyDb, Row, as_db

log = logging.getLogger(__name__)


def dump_json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_JSON_KINDS: dict[type, str] = {dict: "object", list: "array"}
# Fields already reported as holding a bad stored value: logged once each, not once a row.
_reported: set[str] = set()


def report_bad_value(field: str, problem: str) -> None:
    """Log (once per field per process) a stored value a reader had to skip."""
    if field in _reported:
        return
    _reported.add(field)
    log.warning(
        "a stored %s is %s; it is left out wherever it is read (reported once; the row "
        "itself still serves). Fix or re-import the row to restore it.",
        field,
        problem,
    )


def load_json(
    text: str | None, default: Any = None, *, field: str = "JSON value", kind: type | None = None
) -> Any:
    """The parsed JSON text, or `default` for an empty value or one the readers cannot use
    (not JSON, or not a `kind`: a list where `default` is a list unless said otherwise), so
    one bad stored value never fails a whole request."""
    if text is None or text == "":
        return default
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        report_bad_value(field, "not valid JSON")
        return default
    wanted = kind or (type(default) if default is not None else None)
    if wanted is not None and value is not None and not isinstance(value, wanted):
        report_bad_value(field, f"not a JSON {_JSON_KINDS.get(wanted, wanted.__name__)}")
        return default
    return value


def ms(value: Any, field: str = "time") -> int | None:
    """A stored epoch-milliseconds value, or None for one that is not a number."""
    if value is None or isinstance(value, int):
        return value
    try:
        return int(value)
    except (ValueError, TypeError, OverflowError):
        report_bad_value(field, f"not a number ({str(value)[:40]!r})")
        return None


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:32]


def normalised_hash(text: str) -> str:
    """Hash of text normalised for case and whitespace (write-time de-duplication)."""
    return content_hash(" ".join(text.lower().split()))


def iso(row: Row | Mapping[str, Any], key: str) -> str | None:
    return to_iso(ms(row[key], key))


# Rows per multi-row INSERT statement (12 columns x 256 stays far below SQLite's 32766
# bound parameters).
VALUES_CHUNK = 256


def insert_values(
    conn: AnyDb,
    head: str,
    template: str,
    rows: list[tuple[Any, ...]],
    tail: str = "",
) -> None:
    """`head VALUES template, template, ... tail` over `rows`: one statement per chunk of
    rows rather than one per row (each statement is a trip into SQLite that releases and
    retakes the GIL; executemany makes one per row)."""
    db = as_db(conn)
    for start in range(0, len(rows), VALUES_CHUNK):
        chunk = rows[start : start + VALUES_CHUNK]
        db.execute(
            f"{head} VALUES {','.join([template] * len(chunk))} {tail}",
            [value for row in chunk for value in row],
        )


def placeholders(n: int) -> str:
    return ",".join("?" * n)


def by_ids(
    conn: AnyDb,
    select: str,
    id_column: str,
    ids: list[int],
    convert: Callable[[Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    """Rows of `select` (a SELECT ... FROM ... without WHERE) whose `id_column` is in `ids`,
    converted, in the order of `ids`; missing ids are skipped. Ids travel as one parameter
    (see Dialect.in_ids), so there is no bound-parameter limit."""
    if not ids:
        return []
    db = as_db(conn)
    rows = db.execute(
        f"{select} WHERE {db.dialect.in_ids(id_column)}", (db.dialect.ids_parameter(ids),)
    ).fetchall()
    found = {r["id"]: convert(r) for r in rows}
    return [found[i] for i in ids if i in found]


def newest_first_page(
    conn: AnyDb,
    select: str,
    where: list[str],
    args: list[Any],
    *,
    id_column: str,
    before_id: int | None,
    limit: int,
    to_dict: Callable[[Any], dict[str, Any]],
) -> tuple[list[dict[str, Any]], int | None]:
    """One page of `select` filtered by `where` (ANDed), newest id first, from below `before_id`;
    returns (items, the cursor of the next page or None)."""
    if before_id is not None:
        where = [*where, f"{id_column} < ?"]
        args = [*args, before_id]
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    rows = (
        as_db(conn)
        .execute(f"{select} {clause} ORDER BY {id_column} DESC LIMIT ?", (*args, limit + 1))
        .fetchall()
    )
    items = [to_dict(r) for r in rows[:limit]]
    cursor = int(rows[limit - 1]["id"]) if len(rows) > limit else None
    return items, cursor
