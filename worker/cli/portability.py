"""report | export | import | backup: reports and moving the memory between machines.

These read and write the database directly (SQLite's locking makes that safe next to a
running worker; a team database is a server), except `import` with a running worker, which goes
through the worker's API so the worker indexes what arrives; `--direct` forces the direct path.
With a team database configured (CAIRN_DATABASE_URL or `cairn team join`) they work on it, as
the worker does, never on a stale local file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from worker import __version__
from worker.client import ApiError, WorkerDown, request
from worker.errors import CairnError
from worker.home import private_temp
from worker.settings import Settings, load_settings

if TYPE_CHECKING:
    from worker.store import portability
    from worker.store.backend import Backend

BAR_WIDTH = 30


class ProgressBar:
    """A one-line progress bar on stderr (redrawn in place on a terminal, final line otherwise)."""

    def __init__(self, label: str, stream: IO[str] | None = None, *, enabled: bool = True) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.live = enabled and self.stream.isatty()
        self._last = 0.0
        self._done = -1
        self._total = 0

    def __call__(self, done: int, total: int) -> None:
        self._done, self._total = done, total
        now = time.monotonic()
        if self.live and (now - self._last >= 0.1 or done >= total):
            self._last = now
            self.stream.write("\r" + self.line(done, total))
            self.stream.flush()

    def line(self, done: int, total: int) -> str:
        share = 1.0 if total <= 0 else min(1.0, done / total)
        filled = int(share * BAR_WIDTH)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        return f"{self.label} [{bar}] {share * 100:5.1f}% {done}/{total}"

    def finish(self) -> None:
        if not self.enabled or self._done < 0:
            return
        prefix = "\r" if self.live else ""
        self.stream.write(prefix + self.line(self._done, self._total) + "\n")
        self.stream.flush()


def _fail(message: str) -> int:
    print(f"cairn: {message}", file=sys.stderr)
    return 1


def _open_existing(settings: Settings) -> Backend | None:
    """The database the worker uses, opened: the team database when one is configured, else
    the home's SQLite file (None when there is none yet). Raises StoreError when unreachable."""
    from worker.store.backend import make_store  # numpy, anyio: only for commands that use it
    from worker.team import database_url

    url = database_url(settings.home)
    if not url and not settings.db_path.exists():
        return None
    store = make_store(settings, url)
    store.open()
    return store


def _no_database(settings: Settings) -> int:
    return _fail(f"no database at {settings.db_path} yet (nothing recorded)")


# ------------------------------------------------------------------------------------ export
def cmd_export(args: argparse.Namespace) -> int:
    from worker.container import reader_of
    from worker.project_identity import author as git_author
    from worker.store import portability
    from worker.store.errors import StoreError

    settings = load_settings()
    try:
        store = _open_existing(settings)
    except StoreError as exc:
        return _fail(exc.message)
    if store is None:
        return _no_database(settings)
    bar = ProgressBar("export", enabled=not args.quiet)
    # On a team database, as the worker reads: a teammate's private rows are not exported.
    reader = reader_of(store, settings.author or git_author(None))
    target: Path | None = Path(args.output) if args.output and args.output != "-" else None
    try:
        if target is None:
            out = sys.stdout
            lines = store.read_sync(
                lambda c: portability.export_to(
                    c, out.write, version=__version__, visible_to=reader, progress=bar
                )
            )
            out.flush()
        else:
            # The export holds every memory: 0600, through an unguessable temp file beside it.
            with private_temp(target) as handle:
                lines = store.read_sync(
                    lambda c: portability.export_to(
                        c, handle.write, version=__version__, visible_to=reader, progress=bar
                    )
                )
    except OSError as exc:
        return _fail(f"cannot write the export: {exc}")
    finally:
        store.close()
    bar.finish()
    if not args.quiet:
        where = str(target) if target else "stdout"
        print(f"exported {lines - 1} rows to {where}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------ import
def _read_lines(source: str) -> list[str]:
    from worker.store import portability

    if source == "-":
        return portability.split_lines(sys.stdin.read())
    return portability.split_lines(Path(source).read_text(encoding="utf-8"))


def _chunks(lines: list[str], limit: int) -> Iterator[list[str]]:
    """Bodies under `limit` bytes, each starting with the header line."""
    header, rows = lines[0], [line for line in lines[1:] if line.strip()]
    base = len(header.encode()) + 1
    chunk: list[str] = []
    size = base
    for line in rows:
        n = len(line.encode()) + 1
        if base + n > limit:
            raise ValueError(
                "one row is larger than the worker accepts in a request; stop the worker "
                "or use --direct"
            )
        if size + n > limit and chunk:
            yield [header, *chunk]
            chunk, size = [], base
        chunk.append(line)
        size += n
    yield [header, *chunk]


MIN_CHUNK_BYTES = 1024


def _import_via_api(
    settings: Settings, lines: list[str], mode: str, bar: ProgressBar
) -> dict[str, Any]:
    """Post the export in chunks under the worker's body limit; on a 413 (the worker runs with
    a smaller limit than this shell's settings) the rest is re-chunked at half the size.
    Re-sending a chunk is safe: an import of rows already there changes nothing."""
    header, rows = lines[0], [line for line in lines[1:] if line.strip()]
    totals: dict[str, Any] = {"rows": 0, "inserted": 0, "unchanged": 0, "replaced": 0, "skipped": 0}
    limit = int(settings.limits.max_body_bytes * 0.9)
    done = 0
    first = True
    while first or done < len(rows):
        first = False
        chunk = next(_chunks([header, *rows[done:]], limit))
        body = "\n".join(chunk) + "\n"
        try:
            result = request(
                settings,
                "POST",
                f"/api/import?on_conflict={mode}",
                raw_body=body.encode("utf-8"),
                content_type="application/x-ndjson",
                timeout=300,
            )
        except ApiError as exc:
            if exc.status != 413 or limit // 2 < MIN_CHUNK_BYTES:
                raise
            limit //= 2
            continue
        for key in ("rows", "inserted", "unchanged", "replaced", "skipped"):
            totals[key] += int(result.get(key, 0))
        done += len(chunk) - 1
        bar(done, len(rows))
    return totals


def _worker_up(settings: Settings) -> bool:
    try:
        request(settings, "GET", "/health", timeout=2)
    except (WorkerDown, ApiError):
        return False
    return True


def _check_all(settings: Settings, lines: list[str], check: portability.RowCheck) -> None:
    """Every line checked against the database's tables (read-only: the worker owns writes)."""
    from worker.store import portability

    store = _open_existing(settings)
    if store is None:  # nothing stored yet: every row is new
        return
    try:
        store.read_sync(lambda c: portability.check_lines(c, lines, check=check))
    finally:
        store.close()


def cmd_import(args: argparse.Namespace) -> int:
    from worker.store import portability
    from worker.store.backend import make_store
    from worker.store.errors import StoreError
    from worker.team import database_url

    settings = load_settings()
    try:
        lines = _read_lines(args.file)
    except (OSError, UnicodeDecodeError) as exc:
        return _fail(f"cannot read {args.file}: {exc}")
    if not any(line.strip() for line in lines):
        return _fail(f"{args.file} is empty: expected a Cairn export (JSON lines)")
    lines = [line for line in lines if line.strip()]
    bar = ProgressBar("import", enabled=not args.quiet)
    from worker.ops.import_rows import row_check

    check = row_check(settings)
    try:
        if not args.direct and _worker_up(settings):
            # The worker takes the export in several requests: every row is checked first, so
            # that a bad row anywhere leaves the database as it was.
            _check_all(settings, lines, check)
            result = _import_via_api(settings, lines, args.on_conflict, bar)
        else:
            store = make_store(settings, database_url(settings.home))
            store.open()
            try:
                imported = store.write_sync(
                    lambda c: portability.import_lines(
                        c, lines, check=check, on_conflict=args.on_conflict, progress=bar
                    )
                )
            finally:
                store.close()
            result = imported.as_dict()
    except (CairnError, StoreError) as exc:
        bar.finish()
        return _fail(f"import failed, nothing written: {exc.message}")
    except ApiError as exc:
        bar.finish()
        return _fail(f"import failed: {exc}")
    except (ValueError, WorkerDown) as exc:
        bar.finish()
        return _fail(f"import failed: {exc}")
    bar.finish()
    print(
        f"imported {result['rows']} rows: {result['inserted']} new, {result['unchanged']} "
        f"unchanged, {result['replaced']} replaced, {result['skipped']} skipped",
        file=sys.stderr,
    )
    return 0


# ------------------------------------------------------------------------------------ backup
def cmd_backup(args: argparse.Namespace) -> int:
    from worker.store import portability
    from worker.store.errors import StoreError

    settings = load_settings()
    try:
        store = _open_existing(settings)
    except StoreError as exc:
        return _fail(exc.message)
    if store is None:
        return _no_database(settings)
    directory = Path(args.output_dir).expanduser() if args.output_dir else settings.backups_dir
    bar = ProgressBar("backup", enabled=not args.quiet)
    keep = settings.database.backup_keep if args.keep is None else max(0, args.keep)
    try:
        info = store.read_sync(lambda c: portability.backup(c, directory, keep=keep, progress=bar))
    except (OSError, RuntimeError) as exc:
        return _fail(f"backup failed: {exc}")
    except (
        CairnError,
        StoreError,
    ) as exc:  # e.g. a team database: its server's own backups (pg_dump)
        return _fail(f"backup failed: {exc.message}")
    finally:
        store.close()
    bar.finish()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"backup written: {info['path']} ({info['bytes']} bytes)")
        for path in info["pruned"]:
            print(f"removed old backup {path}")
    return 0


# ------------------------------------------------------------------------------------ report
def project_option(text: str | None, team: bool) -> str | None:
    """A --project value as stored (None: every project): a checkout's path, or `.`, keyed as
    the hooks key it (on a team database its git remote, worker/project_identity.py), anything
    else a key or name as given."""
    from worker.project_identity import project_argument

    if not text or text == "all":
        return None
    return project_argument(text, team)


def cmd_report(args: argparse.Namespace) -> int:
    from worker.container import reader_of
    from worker.ops.report import make_report
    from worker.project_identity import author as git_author
    from worker.store.errors import StoreError

    settings = load_settings()
    try:
        store = _open_existing(settings)
    except StoreError as exc:
        return _fail(exc.message)
    if store is None:
        return _no_database(settings)
    project = project_option(args.project, team=store.backend == "postgres")
    # On a team database, as the worker reads: your own prompts and observations and the shared.
    reader = reader_of(store, settings.author or git_author(None))
    try:
        data = store.read_sync(
            lambda c: make_report(
                c, settings, project or None, args.since, args.until, reader=reader
            )
        )
    except (CairnError, StoreError) as exc:
        return _fail(exc.message)
    finally:
        store.close()
    text = json.dumps(data, indent=2) if args.json else data["markdown"]
    if args.output:
        with private_temp(Path(args.output)) as handle:
            handle.write(text)
        print(f"report written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report", help="activity report (Markdown): sessions, files, learned, decisions"
    )
    p.add_argument(
        "--project", help="project key, checkout path (or .) or name (default: every project)"
    )
    p.add_argument("--since", help="start: 7d, 24h, 2w or an ISO date (default: 7 days ago)")
    p.add_argument("--until", help="end: same forms (default: now)")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.add_argument("--json", action="store_true", help="the figures as JSON")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export", help="export every table as JSON lines (ids and times kept)")
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "import",
        help="import an export (FILE), or history: `cairn import claude-code` (see its --help); "
        "importing twice changes nothing",
    )
    p.add_argument("file", help="export file, or - for stdin (claude-code: Claude Code history)")
    p.add_argument(
        "--on-conflict",
        choices=["fail", "skip", "replace"],
        default="fail",
        help="a row whose id exists with other values: fail (default), skip, replace",
    )
    p.add_argument(
        "--direct", action="store_true", help="write the database file even if the worker runs"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("backup", help="online backup of the database to a timestamped file")
    p.add_argument("--output-dir", help="folder for the backup (default: $CAIRN_HOME/backups)")
    p.add_argument(
        "--keep", type=int, default=None, help="keep only the newest N backups (0 keeps all)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_backup)
