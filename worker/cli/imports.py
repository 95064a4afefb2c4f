"""import claude-code: the history a developer already has, stored as the hooks would have.

`cairn import FILE` (an export) lives in portability; `cairn import <source>` with a source name
below comes here (worker/cli/__init__.py routes on the second word).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from worker.client import ApiError, WorkerDown, request
from worker.settings import Settings, load_settings

if TYPE_CHECKING:
    from worker.imports.claude_mem import Dialect
    from worker.imports.run import Totals

SOURCES = ("claude-code", "codex", "gemini", "claude-mem", "kiro-memory")
RETRIES = 20


def parse_since(text: str) -> int:
    """An ISO date or date-time (UTC unless it says otherwise) as epoch milliseconds."""
    try:
        stamp = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--since {text!r} is not a date (use 2026-01-31 or 2026-01-31T09:00)"
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1000)


class Progress:
    """One line on stderr, redrawn in place on a terminal: files, events, rate, time left."""

    def __init__(
        self, stream: IO[str] | None = None, *, enabled: bool = True, source: str = "claude-code"
    ) -> None:
        self.source = source
        self.stream = stream if stream is not None else sys.stderr
        self.live = enabled and self.stream.isatty()
        self.started = time.monotonic()
        self._last = 0.0

    def line(self, totals: Totals) -> str:
        elapsed = max(1e-6, time.monotonic() - self.started)
        rate = totals.events / elapsed
        share = totals.bytes_done / totals.bytes_total if totals.bytes_total else 1.0
        left = elapsed * (1 - share) / share if share > 0 else 0.0
        return (
            f"{self.source}: {totals.files_done}/{totals.files} files {share * 100:5.1f}% · "
            f"{totals.events:,} events · {rate:,.0f}/s · {int(left) // 60}:{int(left) % 60:02d} left"
        )

    def __call__(self, totals: Totals) -> None:
        now = time.monotonic()
        if self.live and now - self._last >= 0.2:
            self._last = now
            self.stream.write("\r\x1b[K" + self.line(totals))
            self.stream.flush()

    def finish(self) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def ensure_worker(settings: Settings) -> None:
    """The worker that takes the import: the running one, else one started now."""
    try:
        request(settings, "GET", "/health", timeout=2)
        return
    except (WorkerDown, ApiError):
        pass
    from worker.spawn import StartFailed, start_worker

    try:
        start_worker(settings, 60)
    except StartFailed as exc:
        raise WorkerDown(str(exc)) from None


def sender(settings: Settings) -> Any:
    def send(events: list[dict[str, Any]]) -> dict[str, Any]:
        """One batch; a 503 (the worker took part of it) sends the rest again."""
        totals = {"stored": 0, "duplicates": 0, "rejected": 0}
        rest = events
        for attempt in range(RETRIES):
            try:
                result = request(
                    settings, "POST", "/api/spool/events", {"events": rest}, timeout=300
                )
            except ApiError as exc:
                if exc.status not in (429, 503) or attempt == RETRIES - 1:
                    raise
                part = exc.body if isinstance(exc.body, dict) else {}
                for key in totals:
                    totals[key] += int(part.get(key, 0))
                rest = rest[int(part.get("delivered", 0)) :]
                time.sleep(min(5.0, 0.2 * 2**attempt))
                continue
            for key in totals:
                totals[key] += int(result.get(key, 0))
            break
        return totals

    return send


def summary(totals: Totals, *, dry_run: bool) -> str:
    verb = "would import" if dry_run else "imported"
    data = totals.as_dict()
    lines = [
        f"{verb} {data['sessions']:,} sessions in {data['projects']:,} projects: "
        f"{data['observations']:,} observations, {data['prompts']:,} prompts, "
        f"{data['summaries']:,} summaries, {data['plans']:,} plan updates"
    ]
    if not dry_run and (data["duplicates"] or data["rejected"]):
        lines.append(
            f"  {data['duplicates']:,} already stored (recorded live or imported before)"
            + (f", {data['rejected']:,} rejected (see the worker log)" if data["rejected"] else "")
        )
    skipped = data["skipped"]
    if skipped:
        parts = ", ".join(f"{reason} {n:,}" for reason, n in skipped.items())
        lines.append(f"  skipped: {parts}")
    return "\n".join(lines)


def run_import(
    settings: Settings,
    *,
    project: str | None = None,
    since_ms: int | None = None,
    dry_run: bool = False,
    quiet: bool = False,
    root: str | None = None,
    source: str = "claude-code",
) -> Totals:
    from pathlib import Path

    from worker.imports.claude_code import projects_dir
    from worker.imports.codex import sessions_dir
    from worker.imports.gemini import tmp_dir
    from worker.imports.hook_builder import HookBuilder
    from worker.imports.run import ClaudeCodeImport, Options
    from worker.imports.state import ImportState

    defaults = {"codex": sessions_dir, "gemini": tmp_dir}
    default = defaults.get(source, projects_dir)()
    options = Options(
        root=Path(root) if root else default,
        project=project,
        since_ms=since_ms,
        dry_run=dry_run,
        batch_events=settings.limits.max_batch,
        batch_bytes=int(settings.limits.max_body_bytes * 0.75),
        source=source,
    )
    state = ImportState.load(settings.home / "imports" / f"{source}.json")
    send = None
    if not dry_run:
        ensure_worker(settings)
        send = sender(settings)
    builder = HookBuilder(_hook_config(settings), agent=source)
    progress = Progress(enabled=not quiet, source=source)
    try:
        return ClaudeCodeImport(options, state, builder, send, progress).run()
    finally:
        progress.finish()
        builder.close()


def _hook_config(settings: Settings) -> dict[str, Any]:
    import json

    try:
        value = json.loads((settings.home / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def cmd_history(args: argparse.Namespace) -> int:
    settings = load_settings()
    try:
        totals = run_import(
            settings,
            project=args.project,
            since_ms=args.since,
            dry_run=args.dry_run,
            quiet=args.quiet,
            root=args.transcripts,
            source=args.source,
        )
    except (WorkerDown, ApiError) as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    print(summary(totals, dry_run=args.dry_run))
    return 0


def import_memory_tool(
    settings: Settings, path: Path, dialect: Dialect, *, dry_run: bool = False
) -> tuple[Counter[str], dict[str, int]]:
    """A memory tool's database (read-only) into the worker; what was sent by kind, and stored."""
    from worker.imports import claude_mem

    conn = claude_mem.open_read_only(path, dialect)
    try:
        claude_mem.schema_version(conn, path, dialect)
        items = list(claude_mem.items(conn, dialect))
    finally:
        conn.close()
    kinds: Counter[str] = Counter(item.kind for item in items)
    totals = {"stored": 0, "duplicates": 0, "rejected": 0}
    if dry_run:
        return kinds, totals
    ensure_worker(settings)
    send = sender(settings)
    batch: list[dict[str, Any]] = []
    hook_items = [i for i in items if i.kind != "memories"]
    for start in range(0, len(hook_items), settings.limits.max_batch):
        batch = [
            {"method": i.method, "path": i.path, "body": i.body}
            for i in hook_items[start : start + settings.limits.max_batch]
        ]
        for key, value in send(batch).items():
            totals[key] = totals.get(key, 0) + int(value)
    for item in items:
        if item.kind == "memories":
            answer = request(settings, item.method, item.path, item.body)
            totals["duplicates" if answer.get("hit_count", 1) > 1 else "stored"] += 1
    return kinds, totals


def cmd_memory_tool(args: argparse.Namespace) -> int:
    from worker.imports import claude_mem, kiro_memory
    from worker.imports.claude_mem import SourceError

    settings = load_settings()
    if args.source == "kiro-memory":
        dialect, default = kiro_memory.KIRO_MEMORY, kiro_memory.default_path()
    else:
        dialect, default = claude_mem.CLAUDE_MEM, claude_mem.default_path()
    path = Path(args.db).expanduser() if args.db else default
    try:
        kinds, totals = import_memory_tool(settings, path, dialect, dry_run=args.dry_run)
    except SourceError as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    except (WorkerDown, ApiError) as exc:
        print(f"cairn: {exc}", file=sys.stderr)
        return 1
    verb = "would import" if args.dry_run else "imported"
    print(
        f"{verb} from {path}: {kinds['sessions']:,} sessions, {kinds['prompts']:,} prompts, "
        f"{kinds['observations']:,} observations ({kinds['memories']:,} decisions also as "
        f"memories), {kinds['summary_notes']:,} summaries"
    )
    if not args.dry_run and (totals["duplicates"] or totals["rejected"]):
        print(
            f"  {totals['duplicates']:,} already stored"
            + (
                f", {totals['rejected']:,} rejected (see the worker log)"
                if totals["rejected"]
                else ""
            )
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("import", help="import history from another tool")
    sources = p.add_subparsers(dest="source", required=True, metavar="SOURCE")
    # Agents' session histories: read as their hooks would have recorded them, one reader each.
    histories = (
        (
            "claude-code",
            "Claude Code's transcripts (~/.claude/projects), stored as the hooks would have",
            "the projects folder to read (default: $CLAUDE_CONFIG_DIR/projects or "
            "~/.claude/projects)",
        ),
        (
            "codex",
            "Codex CLI's sessions ($CODEX_HOME/sessions or ~/.codex/sessions), stored as the "
            "hooks would have",
            "the sessions folder to read (default: $CODEX_HOME/sessions or ~/.codex/sessions)",
        ),
        (
            "gemini",
            "Gemini CLI's chats (~/.gemini/tmp/<project>/chats), stored as the hooks would have",
            "the folder of Gemini CLI's project folders to read (default: ~/.gemini/tmp, "
            "$GEMINI_CLI_HOME/.gemini/tmp when set)",
        ),
    )
    for name, summary_help, folder_help in histories:
        h = sources.add_parser(name, help=summary_help)
        h.add_argument("--project", help="only the project at this path")
        h.add_argument("--since", type=parse_since, help="only events from this date (ISO 8601)")
        h.add_argument("--dry-run", action="store_true", help="count what would be stored")
        h.add_argument("--quiet", action="store_true", help="no progress line")
        h.add_argument("--transcripts", metavar="DIR", help=folder_help)
        h.set_defaults(func=cmd_history)
    cm = sources.add_parser(
        "claude-mem",
        help="claude-mem's database (~/.claude-mem/claude-mem.db), read-only",
    )
    cm.add_argument("db", nargs="?", help="the database file (default ~/.claude-mem/claude-mem.db)")
    cm.add_argument("--dry-run", action="store_true", help="count what would be stored")
    cm.set_defaults(func=cmd_memory_tool)
    km = sources.add_parser(
        "kiro-memory",
        help="kiro-memory's database (~/.kiro-memory/kiro-memory.db), read-only",
    )
    km.add_argument(
        "db",
        nargs="?",
        help="the database file (default: $KIRO_MEMORY_DATA_DIR, ~/.contextkit or "
        "~/.kiro-memory, its kiro-memory.db or contextkit.db)",
    )
    km.add_argument("--dry-run", action="store_true", help="count what would be stored")
    km.set_defaults(func=cmd_memory_tool)
