"""Replay of the hooks' spool ($CAIRN_HOME/spool/*.jsonl): at start, then periodically.

Hooks append one JSON line per request they could not deliver ({method, path, body, ...}).
The replayer claims a file by renaming it (under the same flock the hooks write under), then
sends each line through the application itself, so a replayed event meets exactly the
validation, auth and idempotency (event_id) of a live one: replays never duplicate. A
corrupted line is skipped and counted; a worker-side failure (5xx, 429) keeps the rest of the
file for the next round.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.clock import now_ms, to_iso
from worker.home import private_temp
from worker.settings import Settings
from worker.store import kv
from worker.store.backend import Backend

if TYPE_CHECKING:
    from starlette.types import ASGIApp

log = logging.getLogger(__name__)

# Only what hooks send is replayed: a line naming any other route is rejected as corrupt.
ROUTES = (
    ("POST", re.compile(r"/api/(?:sessions|prompts|observations)")),
    ("POST", re.compile(r"/api/sessions/[^/?#]+/(?:end|summarize|checkpoint)")),
    ("PUT", re.compile(r"/api/sessions/[^/?#]+/plan")),
)
BATCH_PATH = "/api/observations"
TOTALS_KEY = "spool.totals"
COUNTERS = ("files", "replayed", "duplicates", "rejected", "corrupt")
CLAIMED_SUFFIX = ".replaying"


@dataclass
class SpoolLine:
    number: int
    method: str
    path: str
    body: Any


@dataclass
class ReplayResult:
    files: int = 0
    replayed: int = 0
    duplicates: int = 0
    rejected: int = 0
    corrupt: int = 0
    kept: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "replayed": self.replayed,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "corrupt": self.corrupt,
            "kept": self.kept,
            "errors": self.errors[:10],
        }


def parse_line(raw: bytes, number: int) -> SpoolLine | None:
    """One spool line, or None if it is not a well-formed record (corrupt, torn, foreign)."""
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    method, path, body = record.get("method"), record.get("path"), record.get("body")
    if not isinstance(method, str) or not isinstance(path, str) or len(path) > 2048:
        return None
    if ".." in path or not any(m == method and p.fullmatch(path) for m, p in ROUTES):
        return None
    if body is not None and not isinstance(body, dict):
        return None
    return SpoolLine(number, method, path, body)


def session_of(line: SpoolLine) -> str | None:
    """The session a hook request is about (its body's session_id, or the id in its path)."""
    if line.path.startswith("/api/sessions/"):
        return urllib.parse.unquote(line.path.split("/", 4)[3]) or None
    sid = line.body.get("session_id") if isinstance(line.body, dict) else None
    return sid if isinstance(sid, str) and sid else None


def claim(folder: Path) -> list[Path]:
    """Files to replay: leftovers of an earlier round first, else every *.jsonl, renamed."""
    if not folder.is_dir():
        return []
    leftovers = sorted(folder.glob(f"*{CLAIMED_SUFFIX}"))
    if leftovers:
        return leftovers
    claimed: list[Path] = []
    for path in sorted(folder.glob("*.jsonl")):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            if not _lock_briefly(fd):
                continue  # a writer holds it (stopped mid-append?): next round
            st = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue
            if (st.st_ino, st.st_dev) != (current.st_ino, current.st_dev):
                continue
            if st.st_size == 0:
                path.unlink()
                continue
            target = path.with_name(f"{path.stem}.{now_ms()}{CLAIMED_SUFFIX}")
            os.rename(path, target)
            claimed.append(target)
        finally:
            os.close(fd)
    return claimed


def _lock_briefly(fd: int, seconds: float = 2.0) -> bool:
    """Take the flock hooks append under; give up after `seconds` rather than hang a round."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)


def read_lines(path: Path) -> tuple[list[SpoolLine], int]:
    """The well-formed lines of a claimed file and the count of corrupt ones."""
    lines: list[SpoolLine] = []
    corrupt = 0
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        if not raw.strip():
            continue
        parsed = parse_line(raw, number)
        if parsed is None:
            corrupt += 1
            log.warning("spool %s line %d is corrupt; skipped: %r", path.name, number, raw[:120])
        else:
            lines.append(parsed)
    return lines, corrupt


def keep_rest(path: Path, rest: list[SpoolLine]) -> None:
    """Rewrite a claimed file with only the lines still to deliver (atomic replace)."""
    with private_temp(path) as handle:
        for line in rest:
            handle.write(
                json.dumps({"v": 1, "method": line.method, "path": line.path, "body": line.body})
                + "\n"
            )


def backlog(settings: Settings) -> dict[str, Any]:
    """What waits in the spool (for status and doctor): files, bytes, lines, hooks' drops."""
    folder = settings.spool_dir
    files = 0
    size = 0
    lines = 0
    if folder.is_dir():
        for path in [*folder.glob("*.jsonl"), *folder.glob(f"*{CLAIMED_SUFFIX}")]:
            with contextlib.suppress(OSError):
                data = path.read_bytes()
                files += 1
                size += len(data)
                lines += sum(1 for raw in data.splitlines() if raw.strip())
    dropped = 0
    with contextlib.suppress(OSError, ValueError, AttributeError):
        info = json.loads((folder / "dropped.json").read_text())
        dropped = int(info.get("dropped", 0))
    return {"files": files, "bytes": size, "events": lines, "dropped_by_hooks": dropped}


class SpoolReplayer:
    """Background service: replays the spool at start and every `spool_replay_seconds`."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: Settings,
        store: Backend,
        token: Callable[[], str],
        port: int,
        state: dict[str, Any],
        direct: Callable[[str, str, Any], Awaitable[tuple[int, Any]]] | None = None,
    ) -> None:
        """`token` gives the current API token; `state` is the app's lifespan state, which a
        request sent in-process carries as a server would."""
        self.app = app
        self.settings = settings
        self.store = store
        self.token = token
        self.port = port
        self.state = state
        self.direct = direct
        self.folder = settings.spool_dir
        self.totals = ReplayResult()
        self.runs = 0
        self.last_run_ms: int | None = None
        self.last_error: str | None = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def start(self) -> None:
        self._load_totals()
        self._task = asyncio.create_task(self._loop(), name="cairn-spool-replay")

    def _load_totals(self) -> None:
        """The counters survive restarts (kv TOTALS_KEY): a worker killed after a replay must
        not make `cairn status` say nothing was ever replayed."""
        saved = self.store.read_sync(lambda c: kv.get_json(c, TOTALS_KEY))
        if not isinstance(saved, dict):
            return
        for name in COUNTERS:
            value = saved.get(name)
            if isinstance(value, int) and value >= 0:
                setattr(self.totals, name, value)
        runs, last = saved.get("runs"), saved.get("last_run_ms")
        self.runs = runs if isinstance(runs, int) and runs >= 0 else 0
        self.last_run_ms = last if isinstance(last, int) else None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def status(self) -> dict[str, Any]:
        """Flat counters (shown by `cairn status` and /api/status under services.spool)."""
        waiting = backlog(self.settings)
        return {
            "runs": self.runs,
            "last_run_at": to_iso(self.last_run_ms),
            "last_error": self.last_error,
            **{k: v for k, v in self.totals.as_dict().items() if k not in ("errors", "files")},
            "waiting_events": waiting["events"],
            "waiting_bytes": waiting["bytes"],
            "dropped_by_hooks": waiting["dropped_by_hooks"],
        }

    async def _loop(self) -> None:
        period = max(0.05, self.settings.spool.replay_seconds)
        while True:
            try:
                await self.replay()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep the service alive; the next round retries
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("spool replay failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=period)
            self._wake.clear()

    async def replay(self) -> ReplayResult:
        """One round over every claimed file; returns what it did."""
        async with self._lock:
            result = ReplayResult()
            files = await asyncio.to_thread(claim, self.folder)
            for path in files:
                result.files += 1
                if not await self._replay_file(path, result):
                    break  # the worker cannot take writes now; keep the rest for later
            self.runs += 1
            self.last_run_ms = now_ms()
            if result.errors:
                self.last_error = result.errors[-1]
            elif result.files:
                self.last_error = None
            for name in COUNTERS:
                setattr(self.totals, name, getattr(self.totals, name) + getattr(result, name))
            self.totals.kept = result.kept
            if result.files:
                log.info("spool replay: %s", result.as_dict())
                saved = {name: getattr(self.totals, name) for name in COUNTERS}
                saved.update(runs=self.runs, last_run_ms=self.last_run_ms)
                await self.store.write(lambda c: kv.put_json(c, TOTALS_KEY, saved))
            return result

    async def _replay_file(self, path: Path, result: ReplayResult) -> bool:
        lines, corrupt = await asyncio.to_thread(read_lines, path)
        result.corrupt += corrupt
        i = await self.deliver(lines, result)
        if i < len(lines):
            result.kept += len(lines) - i
            await asyncio.to_thread(keep_rest, path, lines[i:])
            return False
        await asyncio.to_thread(path.unlink, True)
        return True

    async def deliver(self, lines: list[SpoolLine], result: ReplayResult) -> int:
        """Send `lines` in order (runs of observations as batches); how many were delivered
        before the worker could take no more (all of them unless a 5xx or 429 stopped it)."""
        i = 0
        max_batch = self.settings.limits.max_batch
        while i < len(lines):
            group = [lines[i]]
            if lines[i].method == "POST" and lines[i].path == BATCH_PATH:
                while (
                    i + len(group) < len(lines)
                    and len(group) < max_batch
                    and lines[i + len(group)].method == "POST"
                    and lines[i + len(group)].path == BATCH_PATH
                    and isinstance(lines[i + len(group)].body, dict)
                    and "observations" not in (lines[i + len(group)].body or {})
                ):
                    group.append(lines[i + len(group)])
            if not await self._deliver(group, result):
                return i
            i += len(group)
        return i

    async def deliver_by_session(self, lines: list[SpoolLine], result: ReplayResult) -> int:
        """Like deliver(), with each session's lines in order and the sessions side by side:
        their writes reach the store together and share its transactions (an import's batch
        holds several sessions; nothing orders one session's writes against another's). How
        many lines, from the first, were delivered; lines past a failure that a session
        delivered anyway are sent again and count as duplicates (every hook request is
        idempotent)."""
        lanes: dict[str, list[SpoolLine]] = {}
        for line in lines:
            key = session_of(line)
            if key is None:
                return await self.deliver(lines, result)  # nothing to go by: one lane
            lanes.setdefault(key, []).append(line)
        if len(lanes) < 2:
            return await self.deliver(lines, result)
        done = await asyncio.gather(*(self.deliver(lane, result) for lane in lanes.values()))
        missing = [
            lane[n].number for lane, n in zip(lanes.values(), done, strict=True) if n < len(lane)
        ]
        if not missing:
            return len(lines)
        first = min(missing)
        return next(i for i, line in enumerate(lines) if line.number == first)

    async def _deliver(self, group: list[SpoolLine], result: ReplayResult) -> bool:
        """Send one line (or a batch of observations); False when the worker must retry later."""
        if len(group) > 1:
            status, body = await self.dispatch(
                "POST", BATCH_PATH, {"observations": [line.body for line in group]}
            )
            if status in (200, 201) and isinstance(body, dict):
                result.replayed += int(body.get("created", 0))
                result.duplicates += int(body.get("duplicates", 0))
                return True
            if status >= 500 or status == 429:
                result.errors.append(f"{BATCH_PATH} answered {status}")
                return False
            # One bad item fails the whole batch: fall back to one request per line.
        for line in group:
            status, body = await self.dispatch(line.method, line.path, line.body)
            if status >= 500 or status == 429:
                result.errors.append(f"{line.method} {line.path} answered {status}")
                return False
            if 200 <= status < 300:
                duplicate = isinstance(body, dict) and body.get("duplicate") is True
                if duplicate:
                    result.duplicates += 1
                else:
                    result.replayed += 1
            else:
                result.rejected += 1
                message = body.get("error", {}).get("message") if isinstance(body, dict) else ""
                log.warning(
                    "spool line %d (%s %s) rejected: %s %s",
                    line.number,
                    line.method,
                    line.path,
                    status,
                    message,
                )
        return True

    async def dispatch(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        """One request into the application in-process: straight into its endpoint when the
        app gave a direct dispatch (worker/api/direct.py), else through the full stack."""
        if self.direct is not None:
            return await self.direct(method, target, body)
        from worker.inprocess import call_app  # (starlette: not for `cairn doctor`)

        path, _, query = target.partition("?")
        port = self.port
        status, data = await call_app(
            self.app,
            method,
            urllib.parse.unquote(path),
            query=query,
            body=body,
            token=self.token(),
            host=f"127.0.0.1:{port}",
            state=self.state,
            client=("cairn-spool", 0),
            server=("127.0.0.1", port),
            extra_headers=[(b"user-agent", b"cairn-spool-replay")],
        )
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = None
        return status, parsed

    def wake(self) -> None:
        """Ask for a round now (e.g. after a hook reports it spooled)."""
        self._wake.set()
