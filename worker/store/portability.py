"""Export / import (JSON lines, every table, ids and times kept) and online backups.

Export format, one JSON object per line:
  line 1: {"format": "cairn-export", "version": 1, "cairn": "<version>", "exported_at": iso,
           "migrations": [1, 2, ...], "tables": {"projects": 3, ...}, "rows": N}
  then:   {"table": "<name>", "row": {"<column>": value, ...}}   (BLOBs as {"$b64": "..."})
Tables come parents first (foreign keys), rows in primary-key order, so the same database always
exports to the same lines. FTS indexes are not exported: the triggers rebuild them on import.
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
from worker.store.errors import InvalidValue, RowConflict

FORMAT = "cairn-export"
FORMAT_VERSION = 1
# Tables that describe the database itself (index_switch is the insert code's trigger switch),
# or that triggers derive from other rows (file_writes is rebuilt from observations as they are
# imported; search_changes logs keyword index writes for the in-memory index; project_activity,
# the days each project was worked on, is rebuilt from the dated rows as they are imported),
# rather than hold data.
SKIPPED_TABLES = frozenset(
    {"schema_migrations", "index_switch", "file_writes", "search_changes", "project_activity"}
)
# Derived from other rows (triggers drop a vector when its item changes): imported last.
LAST_TABLES = ("embeddings",)
ITEM_TABLES = {"observations": "observation", "memories": "memory", "prompts": "prompt"}
ITEM_TABLES_SUMMARY = "summaries"

OnConflict = Literal["fail", "skip", "replace"]
Progress = Callable[[int, int], None]


@dataclass
class TableInfo:
    name: str
    columns: list[str]
    key: list[str]  # primary-key columns (empty: compare whole rows)
    # (column, referenced column) of a foreign key to the table itself, e.g. superseded_by -> id
    self_ref: tuple[str, str] | None = None
    # Declared type (upper case, '' when none) and NOT NULL columns, for the row checks.
    types: dict[str, str] = field(default_factory=dict)
    not_null: frozenset[str] = frozenset()


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


# ---------------------------------------------------------------------------- schema discovery
def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def tables(conn: sqlite3.Connection) -> list[TableInfo]:
    """Ordinary data tables (no FTS/virtual or their shadow tables), parents before children."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
    ).fetchall()
    virtual = [r["name"] for r in rows if (r["sql"] or "").upper().startswith("CREATE VIRTUAL")]
    names = [
        r["name"]
        for r in rows
        if not r["name"].startswith("sqlite_")
        and r["name"] not in SKIPPED_TABLES
        and r["name"] not in virtual
        and not any(r["name"].startswith(v + "_") for v in virtual)
    ]
    parents: dict[str, set[str]] = {}
    infos: dict[str, TableInfo] = {}
    for name in names:
        cols = conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
        key = [c["name"] for c in sorted(cols, key=lambda c: c["pk"]) if c["pk"] > 0]
        fks = conn.execute(f"PRAGMA foreign_key_list({_quote(name)})").fetchall()
        own = [fk for fk in fks if fk["table"] == name and fk["to"]]
        self_ref = (str(own[0]["from"]), str(own[0]["to"])) if len(own) == 1 else None
        infos[name] = TableInfo(
            name,
            [c["name"] for c in cols],
            key,
            self_ref,
            types={c["name"]: str(c["type"] or "").upper() for c in cols},
            not_null=frozenset(c["name"] for c in cols if c["notnull"] or c["pk"]),
        )
        parents[name] = {fk["table"] for fk in fks if fk["table"] != name and fk["table"] in names}
    ordered: list[str] = []
    pending = sorted(names)
    while pending:
        ready = [n for n in pending if parents[n] <= set(ordered)] or pending[:1]
        ordered.extend(ready)
        pending = [n for n in pending if n not in ready]
    ordered.sort(key=lambda n: n in LAST_TABLES)  # stable: keeps parents-first otherwise
    return [infos[n] for n in ordered]


def applied_migrations(conn: sqlite3.Connection) -> list[int]:
    return [int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]


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


def export_lines(
    conn: sqlite3.Connection, *, version: str, progress: Progress | None = None
) -> Iterator[str]:
    """The export, line by line (no newline). Run it inside one read transaction (see export_to)."""
    infos = tables(conn)
    counts = {
        t.name: int(conn.execute(f"SELECT COUNT(*) FROM {_quote(t.name)}").fetchone()[0])
        for t in infos
    }
    total = sum(counts.values())
    yield _dumps(
        {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "cairn": version,
            "exported_at": to_iso(now_ms()),
            "migrations": applied_migrations(conn),
            "tables": counts,
            "rows": total,
        }
    )
    done = 0
    for info in infos:
        cursor = conn.execute(_select_in_order(info))
        columns = [d[0] for d in cursor.description]
        for row in cursor:
            values = {c: _encode(v) for c, v in zip(columns, row, strict=True)}
            yield _dumps({"table": info.name, "row": values})
            done += 1
            if progress is not None and (done % 500 == 0 or done == total):
                progress(done, total)
    if progress is not None:
        progress(total, total)


MAX_CHAIN_DEPTH = 10_000


def _select_in_order(info: TableInfo) -> str:
    """Rows in primary-key order; with a self reference (a memory superseded by another), every
    row after the row it points to, so an import sent in chunks never points forward."""
    table = _quote(info.name)
    order = ", ".join(f"t.{_quote(c)}" for c in info.key) if info.key else "t.rowid"
    if info.self_ref is None:
        return f"SELECT t.* FROM {table} t ORDER BY {order}"
    ref, to = (_quote(c) for c in info.self_ref)
    return (
        f"WITH RECURSIVE chain(k, depth) AS ("
        f"SELECT {to}, 0 FROM {table} WHERE {ref} IS NULL "
        f"OR {ref} NOT IN (SELECT {to} FROM {table} WHERE {to} IS NOT NULL) "
        f"UNION ALL SELECT c.{to}, chain.depth + 1 FROM {table} c JOIN chain "
        f"ON c.{ref} = chain.k AND c.{ref} IS NOT c.{to} WHERE chain.depth < {MAX_CHAIN_DEPTH}) "
        f"SELECT t.* FROM {table} t LEFT JOIN (SELECT k, MIN(depth) AS depth FROM chain GROUP BY k)"
        f" d ON d.k = t.{to} ORDER BY COALESCE(d.depth, {MAX_CHAIN_DEPTH + 1}), {order}"
    )


def export_to(
    conn: sqlite3.Connection,
    write: Callable[[str], Any],
    *,
    version: str,
    progress: Progress | None = None,
) -> int:
    """Write the export through `write` (one call per line, with newline) from one snapshot."""
    lines = 0
    conn.execute("BEGIN")  # a read transaction: every table from the same snapshot
    try:
        for line in export_lines(conn, version=version, progress=progress):
            write(line + "\n")
            lines += 1
    finally:
        conn.execute("COMMIT")
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


def _check_schema(conn: sqlite3.Connection, header: dict[str, Any]) -> None:
    wanted = header.get("migrations")
    if not isinstance(wanted, list) or not all(isinstance(v, int) for v in wanted):
        raise InvalidValue("the export header lists no schema migrations", field="body")
    missing = sorted(set(wanted) - set(applied_migrations(conn)))
    if missing:
        raise InvalidValue(
            f"the export comes from a newer Cairn {header.get('cairn', '?')} (schema steps "
            f"{missing} unknown here); upgrade Cairn before importing",
            field="body",
        )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_row(
    number: int, line: str, infos: dict[str, TableInfo], check: RowCheck
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
        raise InvalidValue(f"line {number}: unknown table {name!r}", field="body")
    row: dict[str, Any] = {}
    for column, value in item["row"].items():
        if column not in info.columns:
            raise InvalidValue(
                f"line {number}: table {info.name!r} has no column {column!r}", field="body"
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


def _existing(conn: sqlite3.Connection, info: TableInfo, row: dict[str, Any]) -> sqlite3.Row | None:
    keys = info.key or list(row)
    where = " AND ".join(f"{_quote(k)} IS ?" for k in keys)
    found: sqlite3.Row | None = conn.execute(
        f"SELECT * FROM {_quote(info.name)} WHERE {where}", [row.get(k) for k in keys]
    ).fetchone()
    return found


def _import_row(
    conn: sqlite3.Connection,
    number: int,
    info: TableInfo,
    row: dict[str, Any],
    on_conflict: OnConflict,
    result: ImportResult,
) -> None:
    current = _existing(conn, info, row)
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
        try:
            _guarded(
                conn,
                f"INSERT INTO {_quote(info.name)} ({', '.join(_quote(c) for c in cols)}) "
                f"VALUES ({', '.join('?' * len(cols))})",
                [row[c] for c in cols],
            )
        except sqlite3.IntegrityError as exc:
            if not _is_clash(exc):
                raise InvalidValue(
                    f"line {number}: table {info.name!r}: {exc}", field="body"
                ) from None
            if on_conflict == "skip":
                result.count(info.name, "skipped")
                return
            raise RowConflict(
                f"line {number}: table {info.name!r}: {exc} (another row already holds this "
                "value; import into an empty home, or use on_conflict=skip)",
                field="body",
            ) from None
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
        try:
            _guarded(
                conn,
                f"UPDATE {_quote(info.name)} SET {', '.join(f'{_quote(c)} = ?' for c in sets)} "
                f"WHERE {' AND '.join(f'{_quote(k)} = ?' for k in info.key)}",
                [row[c] for c in sets] + [row[k] for k in info.key],
            )
        except sqlite3.IntegrityError as exc:
            cls = RowConflict if _is_clash(exc) else InvalidValue
            raise cls(f"line {number}: table {info.name!r}: {exc}", field="body") from None
    result.count(info.name, "replaced")


def _guarded(conn: sqlite3.Connection, sql: str, args: list[Any]) -> None:
    """Run one row's statement. A constraint failure aborts only this statement (SQLite's
    default ABORT resolution, trigger effects included), so no savepoint is needed."""
    conn.execute(sql, args)


def _is_clash(exc: sqlite3.IntegrityError) -> bool:
    """Another row holds the value (as opposed to a NOT NULL, CHECK or type violation)."""
    text = str(exc)
    return "UNIQUE" in text or "PRIMARY KEY" in text


@dataclass
class ParsedRow:
    number: int  # line number in the export
    info: TableInfo
    row: dict[str, Any]
    total: int  # rows the export header announces


def parsed_rows(
    conn: sqlite3.Connection, lines: Iterable[str], *, check: RowCheck
) -> Iterator[ParsedRow]:
    """Every row line parsed and checked (the header line first checked against this
    database's schema); a bad line raises InvalidValue naming it, an empty input too."""
    infos = {t.name: t for t in tables(conn)}
    header: dict[str, Any] | None = None
    total = 0
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if header is None:
            header = _header(line)
            _check_schema(conn, header)
            total = int(header.get("rows") or 0)
            continue
        info, row = _parse_row(number, line, infos, check)
        yield ParsedRow(number, info, row, total)
    if header is None:
        raise InvalidValue(
            "the import is empty: expected a Cairn export (JSON lines)", field="body"
        )


def check_lines(conn: sqlite3.Connection, lines: Iterable[str], *, check: RowCheck) -> int:
    """Parse and check every line of an export without writing (before an import sent in
    several requests, so that a bad row in the last one stops the first); returns the rows."""
    return sum(1 for _ in parsed_rows(conn, lines, check=check))


def import_lines(
    conn: sqlite3.Connection,
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
    result = ImportResult()
    total = 0
    conn.execute("PRAGMA defer_foreign_keys = ON")
    for parsed in parsed_rows(conn, lines, check=check):
        number, total = parsed.number, parsed.total
        try:
            _import_row(conn, number, parsed.info, parsed.row, on_conflict, result)
        except OverflowError:
            raise InvalidValue(
                f"line {number}: a number is out of range (SQLite stores 64-bit integers)",
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
    broken = [
        row
        for table in written
        for row in conn.execute(f"PRAGMA foreign_key_check({_quote(table)})").fetchall()
    ]
    if broken:
        first = broken[0]
        raise InvalidValue(
            f"the import would leave {len(broken)} row(s) pointing at missing rows, e.g. "
            f"{first[0]} rowid {first[1]} -> {first[2]}; import the full export",
            field="body",
        )
    if progress is not None:
        progress(result.rows, max(total, result.rows))
    return result


# ---------------------------------------------------------------------------- backup
def backup_name(at_ms: int) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(at_ms / 1000))
    return f"cairn-{stamp}{at_ms % 1000:03d}Z.db"


def backup(
    conn: sqlite3.Connection, directory: Path, *, keep: int = 0, progress: Progress | None = None
) -> dict[str, Any]:
    """Copy the live database with SQLite's online backup API to a timestamped file.

    Written under a temporary name, checked (quick_check), then renamed, so a backup file is
    always complete. Keeps the newest `keep` backups (0 keeps all).
    """
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
