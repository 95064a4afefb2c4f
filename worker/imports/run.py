"""`cairn import claude-code`: transcripts -> hook events -> hook requests -> the worker.

Sessions are read one at a time (memory stays flat whatever the history's size); their requests
are sent in batches to POST /api/spool/events, which delivers them as a spool replay would
(exactly once by event id). A file's progress is recorded only once what it gave was delivered.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.imports import claude_code, codex, gemini
from worker.imports.claude_code import HookEvent, SessionFiles
from worker.imports.hook_builder import HookBuilder, Request
from worker.imports.state import FileMark, ImportState
from worker.imports.transcript import UNPAIRED, Line, Skips, read_lines

# Kinds of what was sent, by request path, for the summary.
KINDS = (
    ("/api/observations", "observations"),
    ("/api/prompts", "prompts"),
    ("/summarize", "summaries"),
    ("/plan", "plans"),
    ("/api/sessions", "session_starts"),
)
Sender = Callable[[list[dict[str, Any]]], dict[str, Any]]


@dataclass
class Options:
    root: Path
    project: str | None = None  # only this project (resolved as the hooks resolve a cwd)
    since_ms: int | None = None
    dry_run: bool = False
    batch_events: int = 500
    batch_bytes: int = 768 * 1024
    source: str = "claude-code"  # whose session files: claude-code, codex or gemini (SOURCES)


# Each agent's session files: how to find them, and the reader that turns one into hook events.
SOURCES: dict[str, tuple[Callable[[Path], list[SessionFiles]], Any]] = {
    "claude-code": (claude_code.discover, claude_code.TranscriptEvents),
    "codex": (codex.discover, codex.RolloutEvents),
    "gemini": (gemini.discover, gemini.ChatEvents),
}


@dataclass
class Totals:
    files: int = 0
    files_done: int = 0
    bytes_total: int = 0
    bytes_done: int = 0
    sessions: int = 0
    projects: set[str] = field(default_factory=set)
    sent: Counter[str] = field(default_factory=Counter)  # requests built, by kind
    events: int = 0
    stored: int = 0
    duplicates: int = 0
    rejected: int = 0
    skips: Skips = field(default_factory=Skips)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "sessions": self.sessions,
            "projects": len(self.projects),
            "events": self.events,
            **{kind: self.sent[kind] for _, kind in KINDS},
            "stored": self.stored,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "skipped": dict(sorted(self.skips.counts.items())),
        }


def _kind(request: Request) -> str:
    for ending, kind in KINDS:
        if request.path.endswith(ending):
            return kind
    return "other"


class _Tracked:
    """Lines of one file, remembering where the last complete one ended."""

    def __init__(self, lines: Iterator[Line], start: int) -> None:
        self.lines = lines
        self.end = start

    def __iter__(self) -> Iterator[Line]:
        for line in self.lines:
            self.end = line.end
            yield line


class ClaudeCodeImport:
    def __init__(
        self,
        options: Options,
        state: ImportState,
        builder: HookBuilder,
        send: Sender | None,
        progress: Callable[[Totals], None] | None = None,
    ) -> None:
        self.options = options
        self.state = state
        self.builder = builder
        self.send = send
        self.progress = progress
        self.totals = Totals()
        self.batch: list[dict[str, Any]] = []
        self.batch_bytes = 0
        self.marks: list[tuple[Path, FileMark]] = []  # applied once their batch is delivered
        self.sending: tuple[Future[dict[str, Any]], list[tuple[Path, FileMark]]] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.only_project = (
            builder.project(os.path.abspath(options.project)) if options.project else None
        )

    # ------------------------------------------------------------------ reading
    def session_events(
        self, session: SessionFiles
    ) -> tuple[list[HookEvent], list[tuple[Path, FileMark]]]:
        """Every event of a changed session, in time order, and the files' new marks."""
        events: list[HookEvent] = []
        marks: list[tuple[Path, FileMark]] = []
        readers = []
        for path in session.paths():
            try:
                st = path.stat()
                handle = open(path, "rb")  # noqa: SIM115 - closed below
            except OSError:
                continue
            with handle:
                reader = SOURCES[self.options.source][1](
                    path, self.totals.skips, agent=path != session.main
                )
                tracked = _Tracked(read_lines(handle, 0, self.totals.skips), 0)
                events.extend(reader.events(tracked))
                readers.append(reader)
            marks.append((path, FileMark(st.st_size, st.st_mtime_ns, tracked.end)))
            self.totals.bytes_done += st.st_size
        for reader in readers:
            if reader.unpaired():
                self.totals.skips.add(UNPAIRED, reader.unpaired())
        events.sort(key=lambda e: e.at_ms)
        return events, marks

    def changed(self, session: SessionFiles) -> bool:
        for path in session.paths():
            try:
                st = path.stat()
            except OSError:
                continue
            if self.options.since_ms is not None and st.st_mtime_ns // 1_000_000 < (
                self.options.since_ms
            ):
                continue
            if not self.state.unchanged(path, st):
                return True
        return False

    def new_requests(self, events: list[HookEvent]) -> list[Request]:
        """The requests for what is new in a session (the plan reducer sees every event)."""
        since = self.options.since_ms
        offsets = {e.path: self.state.offset(Path(e.path)) for e in events}
        fresh = {
            id(e) for e in events if e.end > offsets[e.path] and (since is None or e.at_ms >= since)
        }
        stops = [e for e in events if e.name == "Stop" and id(e) in fresh]
        last_stop = stops[-1] if stops else None  # one summary per session: the last one
        task_tools = self.builder.task_tools
        out: list[Request] = []
        for event in events:
            if id(event) not in fresh:
                if event.payload.get("tool_name") in task_tools:
                    self.builder.build(event)  # the kept tasks, for later plans
                continue
            requests = self.builder.build(event)
            if event.name == "Stop" and event is not last_stop:
                # Every turn's end still gives its answer observation, as the live Stop hook
                # stores one per turn; only the summary is the last turn's alone.
                requests = [r for r in requests if not r.path.endswith("/summarize")]
            out.extend(requests)
        return out

    # ------------------------------------------------------------------ sending
    def queue(self, requests: list[Request]) -> None:
        for request in requests:
            record = {"method": request.method, "path": request.path, "body": request.body}
            size = len(str(record)) + 64
            if self.batch and (
                len(self.batch) >= self.options.batch_events
                or self.batch_bytes + size > self.options.batch_bytes
            ):
                self.flush()
            self.batch.append(record)
            self.batch_bytes += size

    def flush(self) -> None:
        """Hand the batch to the sending thread (after the previous one is delivered, so
        batches arrive in order) and go on reading while the worker stores it."""
        batch, marks = self.batch, self.marks
        self.batch, self.batch_bytes, self.marks = [], 0, []
        self.wait_sent()
        if batch and self.send is not None and not self.options.dry_run:
            self.sending = (self.sender().submit(self.send, batch), marks)
        else:
            self.commit_marks(marks)

    def wait_sent(self) -> None:
        """Wait for the batch in flight; its sessions' marks are recorded once it is stored."""
        if self.sending is None:
            return
        future, marks = self.sending
        self.sending = None
        result = future.result()  # the sender's error is raised here, in the reading thread
        self.totals.stored += int(result.get("stored", 0))
        self.totals.duplicates += int(result.get("duplicates", 0))
        self.totals.rejected += int(result.get("rejected", 0))
        self.commit_marks(marks)

    def sender(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cairn-import-send")
        return self._pool

    def commit_marks(self, marks: list[tuple[Path, FileMark]]) -> None:
        if self.options.dry_run:
            return
        for path, mark in marks:
            self.state.mark(path, mark)

    # ------------------------------------------------------------------ the run
    def run(self) -> Totals:
        sessions = SOURCES[self.options.source][0](self.options.root)
        todo = [s for s in sessions if self.changed(s)]
        for session in todo:
            for path in session.paths():
                try:
                    self.totals.bytes_total += path.stat().st_size
                except OSError:
                    continue
                self.totals.files += 1
        try:
            self._read_and_send(todo)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
        if not self.options.dry_run:
            self.state.save()
        return self.totals

    def _read_and_send(self, todo: list[SessionFiles]) -> None:
        for session in todo:
            events, marks = self.session_events(session)
            self.totals.files_done += len(marks)
            requests = self._session_requests(events)
            if requests:
                self.totals.sessions += 1
                self.totals.events += len(requests)
                for request in requests:
                    self.totals.sent[_kind(request)] += 1
                self.queue(requests)
            self.marks.extend(marks)
            if self.progress is not None:
                self.progress(self.totals)
        self.flush()
        self.wait_sent()

    def _session_requests(self, events: list[HookEvent]) -> list[Request]:
        cwd = next((str(e.payload.get("cwd")) for e in events if e.payload.get("cwd")), "")
        if not cwd:
            return []
        project = self.builder.project(cwd)
        if self.only_project is not None and project != self.only_project:
            return []
        if self.builder.excluded(cwd, project):
            return []
        requests = self.new_requests(events)
        if requests:
            self.totals.projects.add(project)
        return requests
