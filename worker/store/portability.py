"""Export / import (JSON lines, every table, ids and times kept) and online backups.

Export format, one JSON object per line:
  line 1: {"format": "cairn-export", "version": 1, "cairn": "<version>", "exported_at": iso,
           "migrations": [1, 2, ...], "tables": {"projects": 3, ...}, "rows": N}
  then:   {"table": "<name>", "row": {"<column>": value, ...}}   (BLOBs as {"$b64": "..."})
Tables come parents first (foreign keys), rows in primary-key order, so the same database always
exports to the same lines. FTS indexes are not exported: the triggers rebuild them on import.

Across backends: the header says which database wrote it ("backend": "sqlite" or "postgres";
an export without it is SQLite's). The two databases number their schema steps apart, so
`migrations` is compared only between exports and databases of one backend; across them, a row
whose table or column the database lacks is refused naming its line. Rows keep their ids (the
identity sequence is moved past them on PostgreSQL), so an export from SQLite imported into an
empty PostgreSQL database and exported back gives the same rows; the columns PostgreSQL's writer
fills (keyword index words, pgvector's copy of a vector) are filled again on import, never
exported (store/catalog.py).
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from worker.clock import now_ms, to_iso
from worker.home import ensure_private_dir
from worker.store import privacy
from worker.store.catalog import TableInfo, applied_migrations, catalog, quote, tables
from worker.store.db import AnyDb, Db, Row, as_db, same_value
from worker.store.errors import InvalidValue, RowConflict
from worker.store.writer_filled import fill_derived, with_derived

__all__ = ["TableInfo", "applied_migrations", "tables"]  # where the import's row checks read them

FORMAT = "cairn-export"
FORMAT_VERSION = 1
ITEM_TABLES = {"observations": "observation", "memories": "memory", "prompts": "prompt"}
# The kinds private to their author on a team database (store/privacy.py), by table.
PRIVATE_TABLES = {"prompt": "prompts", "observation": "observations"}
ITEM_TABLES_SUMMARY = "summaries"

OnConflict = Literal["fail", "skip", "replace"]
Progress = Callable[[int, int], None]


# Checks one parsed row of a table before it is written; raises InvalidValue naming the column.
RowCheck = Callable[[TableInfo, dict[str, Any]], None]


@dataclass
class ImportResult:
    rows: int = 0
    inserted: int = 0
    unchanged: int = 0
    replaced: int = 0
    skipped: int = 0
    tables: dict[str, dict[str, int]] = field(default_factory=dict)
    # New item ids by kind (observation, memory, prompt, summary) for the embedder.
    new_items: dict[str, list[int]] = field(default_factory=dict)

    def count(self, table: str, outcome: str) -> None:
        per = self.tables.setdefault(
            table, {"inserted": 0, "unchanged": 0, "replaced": 0, "skipped": 0}
        )
        per[outcome] += 1
        setattr(self, outcome, getattr(self, outcome) + 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "inserted": self.inserted,
            "unchanged": self.unchanged,
            "replaced": self.replaced,
            "skipped": self.skipped,
            "tables": self.tables,
        }


# ---------------------------------------------------------------------------- export
def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode("ascii")}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$b64"} and isinstance(value["$b64"], str):
            return base64.b64decode(value["$b64"], validate=True)
        raise ValueError("an object value must be {'$b64': '...'}")
    if isinstance(value, list):
        raise ValueError("a list is not a column value")
    return value


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _visible_rows(info: TableInfo, visible_to: str | None) -> tuple[str, tuple[object, ...]]:
    """The WHERE term (on alias t) of the rows of `info` an export for `visible_to` holds: on a
    team database, a teammate's private prompts and observations are left out, with the rows
    that hold or point to them (their vectors, their injections) (store/privacy.py)."""
    if visible_to is None:
        return "", ()
    if info.name in PRIVATE_TABLES.values():
        return privacy.shared_or_by("t", visible_to)
    if not {"item_kind", "item_id"} <= set(info.columns):
        return "", ()
    terms = ["t.item_kind NOT IN ('prompt', 'observation')"]
    args: list[object] = []
    for kind, table in PRIVATE_TABLES.items():
        visible, visible_args = privacy.shared_or_by("x", visible_to)
        terms.append(
            f"(t.item_kind = '{kind}' AND t.item_id IN (SELECT x.id FROM {table} x "
            f"WHERE {visible}))"
        )
        args.extend(visible_args)
    return "(" + " OR ".join(terms) + ")", tuple(args)


def export_lines(
    conn: AnyDb,
    *,
    version: str,
    visible_to: str | None,
    progress: Progress | None = None,
) -> Iterator[str]:
    """The export, line by line (no newline). Run it inside one read transaction (see export_to).

    Every row, or given `visible_to` (a team database's reader, Cairn.reader), every row but a
    teammate's private prompts and observations and what points to them."""
    db = as_db(conn)
    infos = tables(db)
    counts: dict[str, int] = {}
    for t in infos:
        where, args = _visible_rows(t, visible_to)
        sql = f"SELECT COUNT(*) FROM {quote(t.name)} t" + (f" WHERE {where}" if where else "")
        counts[t.name] = int(db.execute(sql, args).fetchone()[0])
    total = sum(counts.values())
    header: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "cairn": version,
        "backend": db.dialect.name,
        "exported_at": to_iso(now_ms()),
        "migrations": applied_migrations(db),
        "tables": counts,
        "rows": total,
    }
    if visible_to is not None:
        header["private_rows_of"] = visible_to  # a teammate's private rows are not in it
    yield _dumps(header)
    done = 0
    for info in infos:
        where, args = _visible_rows(info, visible_to)
        for row in db.execute(_select_in_order(db, info, where), args):
            values = {c: _encode(v) for c, v in zip(info.columns, row, strict=True)}
            yield _dumps({"table": info.name, "row": values})
            done += 1
            if progress is not None and (done % 500 == 0 or done == total):
                progress(done, total)
    if progress is not None:
        progress(total, total)


MAX_CHAIN_DEPTH = 10_000


def _select_in_order(db: Db, info: TableInfo, where: str = "") -> str:
    """Rows (those of `where`, on alias t) in primary-key order; with a self reference (a memory
    superseded by another), every row after the row it points to, so an import sent in chunks
    never points forward."""
    table = quote(info.name)
    columns = ", ".join(f"t.{quote(c)}" for c in info.columns)
    keys = info.key or [catalog(db).insertion_order("t") or "", *info.columns]
    order = ", ".join(k if k.startswith("t.") else f"t.{quote(k)}" for k in keys if k)
    if info.self_ref is None:
        return (
            f"SELECT {columns} FROM {table} t{f' WHERE {where}' if where else ''} ORDER BY {order}"
        )
    assert not where, f"{info.name}: a table with a self reference is exported whole"
    ref, to = (quote(c) for c in info.self_ref)
    return (
        f"WITH RECURSIVE chain(k, depth) AS ("
        f"SELECT {to}, 0 FROM {table} WHERE {ref} IS NULL "
        f"OR {ref} NOT IN (SELECT {to} FROM {table} WHERE {to} IS NOT NULL) "
        f"UNION ALL SELECT c.{to}, chain.depth + 1 FROM {table} c JOIN chain "
        f"ON c.{ref} = chain.k AND c.{ref} <> c.{to} WHERE chain.depth < {MAX_CHAIN_DEPTH}) "
        f"SELECT {columns} FROM {table} t LEFT JOIN (SELECT k, MIN(depth) AS depth FROM chain "
        f"GROUP BY k) d ON d.k = t.{to} ORDER BY COALESCE(d.depth, {MAX_CHAIN_DEPTH + 1}), {order}"
    )


def export_to(
    conn: AnyDb,
    write: Callable[[str], Any],
    *,
    version: str,
    visible_to: str | None,
    progress: Progress | None = None,
) -> int:
    """Write the export through `write` (one call per line, with newline) from one snapshot
    (inside a store's read: `Store.read_sync` or `PgStore.read_sync`), as `visible_to` reads
    (export_lines)."""
    db = as_db(conn)
    cat = catalog(db)
    lines = 0
    db.execute(cat.SNAPSHOT_BEGIN)  # every table from the same snapshot
    try:
        for line in export_lines(db, version=version, visible_to=visible_to, progress=progress):
            write(line + "\n")
            lines += 1
    finally:
        if cat.SNAPSHOT_END:
            db.execute(cat.SNAPSHOT_END)
    return lines


# ---------------------------------------------------------------------------- import
def split_lines(text: str) -> list[str]:
    """Export lines: split on newline only (str.splitlines would also cut at U+2028, U+0085...,
    which JSON strings written with ensure_ascii=False may contain)."""
    return [line for line in text.split("\n") if line.strip()]


def _header(line: str) -> dict[str, Any]:
    try:
        header = json.loads(line, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InvalidValue(
            'line 1 is not a Cairn export header (expected {"format": "cairn-export", ...})',
            field="body",
        )
    if header.get("version") != FORMAT_VERSION:
        raise InvalidValue(
            f"export format version {header.get('version')!r} is not supported "
            f"(this Cairn reads version {FORMAT_VERSION})",
            field="body",
        )
    return header


def _check_schema(db: Db, header: dict[str, Any]) -> None:
    wanted = header.get("migrations")
    if not isinstance(wanted, list) or not all(isinstance(v, int) for v in wanted):
        raise InvalidValue("the export header lists no schema migrations", field="body")
    if header.get("backend", "sqlite") != db.dialect.name:
        return  # steps numbered apart: each row's table and columns are checked instead
    missing = sorted(set(wanted) - set(applied_migrations(db)))
    if missing:
        raise InvalidValue(
            f"the export comes from a newer Cairn {header.get('cairn', '?')} (schema steps "
            f"{missing} unknown here); upgrade Cairn before importing",
            field="body",
        )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_row(
    number: int, line: str, infos: dict[str, TableInfo], check: RowCheck, elsewhere: str
) -> tuple[TableInfo, dict[str, Any]]:
    try:
        item = json.loads(line, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidValue(f"line {number}: not valid JSON ({exc})", field="body") from None
    if not isinstance(item, dict) or not isinstance(item.get("row"), dict):
        raise InvalidValue(
            f'line {number}: expected {{"table": ..., "row": {{...}}}}', field="body"
        )
    name = item.get("table")
    info = infos.get(name) if isinstance(name, str) else None
    if info is None:
        raise InvalidValue(f"line {number}: unknown table {name!r}{elsewhere}", field="body")
    row: dict[str, Any] = {}
    for column, value in item["row"].items():
        if column not in info.columns:
            raise InvalidValue(
                f"line {number}: table {info.name!r} has no column {column!r}{elsewhere}",
                field="body",
            )
        try:
            row[column] = _decode(value)
        except ValueError as exc:
            raise InvalidValue(f"line {number}: column {column!r}: {exc}", field="body") from None
    missing_key = [k for k in info.key if row.get(k) is None]
    if missing_key:
        raise InvalidValue(
            f"line {number}: table {info.name!r} row lacks its key {missing_key}", field="body"
        )
    try:
        check(info, row)
    except InvalidValue as exc:
        raise InvalidValue(
            f"line {number}: table {info.name!r}: {exc.message}", field=exc.field, line=number
        ) from None
    return info, row


def _existing(db: Db, info: TableInfo, row: dict[str, Any]) -> Row | None:
    keys = info.key or list(row)
    terms = [same_value(quote(k), row.get(k)) for k in keys]
    found: Row | None = db.execute(
        f"SELECT {', '.join(quote(c) for c in info.columns)} FROM {quote(info.name)} "
        f"WHERE {' AND '.join(t for t, _ in terms)}",
        [v for _, values in terms for v in values],
    ).fetchone()
    return found


def _import_row(
    db: Db,
    number: int,
    info: TableInfo,
    row: dict[str, Any],
    on_conflict: OnConflict,
    result: ImportResult,
) -> None:
    current = _existing(db, info, row)
    if current is not None and info.self_ref is not None:
        ref = info.self_ref[0]
        if row.get(ref) is None and current[ref] is not None:
            # A newer row replaced this one since the export (a superseded memory): an older
            # export must not make it current again while the newer one stands.
            row = {**row, ref: current[ref]}
    cols = list(row)
    if current is not None and all(current[c] == row[c] for c in cols):
        result.count(info.name, "unchanged")
        return
    if current is None:
        written, filled = with_derived(db, info.name, row)
        sql = (
            f"INSERT INTO {quote(info.name)} ({', '.join(quote(c) for c in written)}) "
            f"VALUES ({', '.join('?' * len(written))})"
        )
        if not _guarded(db, number, info, sql, list(written.values()), on_conflict):
            result.count(info.name, "skipped")
            return
        if not filled:
            fill_derived(db, info.name, row)
        result.count(info.name, "inserted")
        kind = ITEM_TABLES.get(info.name) or (
            "summary" if info.name == ITEM_TABLES_SUMMARY else None
        )
        if kind is not None and isinstance(row.get("id"), int):
            result.new_items.setdefault(kind, []).append(int(row["id"]))
        return
    if on_conflict == "skip":
        result.count(info.name, "skipped")
        return
    if on_conflict == "fail":
        key = {k: row[k] for k in info.key}
        raise RowConflict(
            f"line {number}: table {info.name!r} row {key} differs from the stored one "
            "(use on_conflict=replace to overwrite, or skip to keep the stored row)",
            field="body",
        )
    sets = [c for c in cols if c not in info.key]
    if sets:
        _guarded(
            db,
            number,
            info,
            f"UPDATE {quote(info.name)} SET {', '.join(f'{quote(c)} = ?' for c in sets)} "
            f"WHERE {' AND '.join(f'{quote(k)} = ?' for k in info.key)}",
            [row[c] for c in sets] + [row[k] for k in info.key],
            "fail",
        )
        fill_derived(db, info.name, row)
    result.count(info.name, "replaced")


def _guarded(
    db: Db, number: int, info: TableInfo, sql: str, args: list[Any], on_conflict: OnConflict
) -> bool:
    """Run one row's statement; False when another row holds its key or a unique value and
    `on_conflict` is skip. On SQLite a failed statement undoes only itself (its default ABORT
    resolution, trigger effects included); on PostgreSQL it spoils the transaction, so a
    statement whose failure is skipped runs under a savepoint."""
    cat = catalog(db)
    savepoint = on_conflict == "skip" and cat.FAILURE_ENDS_TRANSACTION
    if savepoint:
        db.execute("SAVEPOINT import_row")
    try:
        db.execute(sql, args)
    except Exception as exc:
        failure = cat.integrity_failure(exc)
        if failure is None:
            raise
        if savepoint:
            db.execute("ROLLBACK TO SAVEPOINT import_row")
        where = f"line {number}: table {info.name!r}"
        if failure == "missing":
            raise InvalidValue(
                f"{where}: the import would leave this row pointing at missing rows ({exc}); "
                "import the full export",
                field="body",
            ) from None
        if failure != "clash":
            raise InvalidValue(f"{where}: {exc}", field="body") from None
        if on_conflict == "skip":
            return False
        raise RowConflict(
            f"{where}: {exc} (another row already holds this value; import into an empty "
            "home, or use on_conflict=skip)",
            field="body",
        ) from None
    if savepoint:
        db.execute("RELEASE SAVEPOINT import_row")
    return True


@dataclass
class ParsedRow:
    number: int  # line number in the export
    info: TableInfo
    row: dict[str, Any]
    total: int  # rows the export header announces


def parsed_rows(conn: AnyDb, lines: Iterable[str], *, check: RowCheck) -> Iterator[ParsedRow]:
    """Every row line parsed and checked (the header line first checked against this
    database's schema); a bad line raises InvalidValue naming it, an empty input too."""
    db = as_db(conn)
    infos = {t.name: t for t in tables(db)}
    header: dict[str, Any] | None = None
    total = 0
    elsewhere = ""
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if header is None:
            header = _header(line)
            _check_schema(db, header)
            total = int(header.get("rows") or 0)
            source = header.get("backend", "sqlite")
            if source != db.dialect.name:
                elsewhere = (
                    f" in this {db.dialect.name} database (the export is from {source!s:.20}, "
                    f"Cairn {header.get('cairn', '?')!s:.40}: a newer Cairn, or a table not "
                    f"yet stored on {db.dialect.name})"
                )
            continue
        info, row = _parse_row(number, line, infos, check, elsewhere)
        yield ParsedRow(number, info, row, total)
    if header is None:
        raise InvalidValue(
            "the import is empty: expected a Cairn export (JSON lines)", field="body"
        )


def check_lines(conn: AnyDb, lines: Iterable[str], *, check: RowCheck) -> int:
    """Parse and check every line of an export without writing (before an import sent in
    several requests, so that a bad row in the last one stops the first); returns the rows."""
    return sum(1 for _ in parsed_rows(conn, lines, check=check))


def import_lines(
    conn: AnyDb,
    lines: Iterable[str],
    *,
    check: RowCheck,
    on_conflict: OnConflict = "fail",
    progress: Progress | None = None,
) -> ImportResult:
    """Import an export inside the caller's write transaction. Re-importing changes nothing.

    Every row passes `check` (the live API's rules, worker/ops/import_rows.py) before it is
    written; one bad row fails the whole import (400 naming its line and column), and the
    caller's transaction rolls back, so nothing is stored.
    Rows whose key exists and whose values are equal are left alone; a differing row is a
    conflict (fail: 409 and nothing is written; skip: keep the stored row; replace: overwrite).
    """
    db = as_db(conn)
    cat = catalog(db)
    result = ImportResult()
    total = 0
    infos: dict[str, TableInfo] = {}
    if cat.DEFER_FOREIGN_KEYS:
        db.execute(cat.DEFER_FOREIGN_KEYS)
    for parsed in parsed_rows(db, lines, check=check):
        number, total = parsed.number, parsed.total
        infos[parsed.info.name] = parsed.info
        try:
            _import_row(db, number, parsed.info, parsed.row, on_conflict, result)
        except OverflowError:
            raise InvalidValue(
                f"line {number}: a number is out of range (the database stores 64-bit integers)",
                field="body",
            ) from None
        except UnicodeEncodeError:
            raise InvalidValue(
                f"line {number}: a text value is not valid Unicode (lone surrogate)", field="body"
            ) from None
        result.rows += 1
        if progress is not None and result.rows % 500 == 0:
            progress(result.rows, max(total, result.rows))
    # Only the tables this import wrote to: older damage elsewhere is not this import's fault.
    written = [t for t, n in result.tables.items() if n["inserted"] or n["replaced"]]
    if cat.FOREIGN_KEY_CHECK:
        broken = [
            row
            for table in written
            for row in db.execute(cat.FOREIGN_KEY_CHECK.format(table=quote(table))).fetchall()
        ]
        if broken:
            first = broken[0]
            raise InvalidValue(
                f"the import would leave {len(broken)} row(s) pointing at missing rows, e.g. "
                f"{first[0]} rowid {first[1]} -> {first[2]}; import the full export",
                field="body",
            )
    for table in written:
        if infos[table].key == ["id"] and infos[table].types.get("id") == "INTEGER":
            catch_up = db.dialect.id_sequence_catch_up(table)
            if catch_up is not None:  # rows came with their ids: new rows get fresh ones
                db.execute(catch_up)
    if progress is not None:
        progress(result.rows, max(total, result.rows))
    return result


# ---------------------------------------------------------------------------- backup
def backup_name(at_ms: int) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(at_ms / 1000))
    return f"cairn-{stamp}{at_ms % 1000:03d}Z.db"


def backup(
    conn: AnyDb, directory: Path, *, keep: int = 0, progress: Progress | None = None
) -> dict[str, Any]:
    """Copy the live database with SQLite's online backup API to a timestamped file.

    Written under a temporary name, checked (quick_check), then renamed, so a backup file is
    always complete. Keeps the newest `keep` backups (0 keeps all). A team database (PostgreSQL)
    is backed up by its server, not by one of its workers: refused.
    """
    if not isinstance(conn, sqlite3.Connection):
        raise InvalidValue(
            "a team database is backed up by its PostgreSQL server (pg_dump, or its managed "
            "backups), not by Cairn; GET /api/export (`cairn export`) exports its rows"
        )
    ensure_private_dir(directory)
    started = now_ms()
    target = directory / backup_name(started)
    # An unguessable 0600 file (O_EXCL) that SQLite then fills: never a link planted for us.
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=directory)
    os.close(fd)
    partial = Path(name)
    dest = sqlite3.connect(partial)
    try:

        def step(status: int, remaining: int, total: int) -> None:
            if progress is not None:
                progress(total - remaining, total)

        # One step: the copy is read from a single snapshot (WAL readers never block the worker's
        # writers), whereas a stepped backup restarts whenever another connection writes.
        conn.backup(dest, pages=-1, progress=step)
        check = dest.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise RuntimeError(f"the backup failed its integrity check: {check}")
    except BaseException:
        dest.close()
        partial.unlink(missing_ok=True)
        raise
    dest.close()
    partial.replace(target)
    removed = prune_backups(directory, keep) if keep > 0 else []
    return {
        "path": str(target),
        "bytes": target.stat().st_size,
        "created_at": to_iso(started),
        "seconds": round((now_ms() - started) / 1000, 3),
        "pruned": [str(p) for p in removed],
    }


def list_backups(directory: Path) -> list[Path]:
    """Backups, newest first."""
    if not directory.is_dir():
        return []
    return sorted(directory.glob("cairn-*Z.db"), reverse=True)


def prune_backups(directory: Path, keep: int) -> list[Path]:
    old = list_backups(directory)[keep:]
    for path in old:
        path.unlink(missing_ok=True)
    return old
