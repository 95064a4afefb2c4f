"""Export (streamed JSON lines), import and online backup over HTTP."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.responses import StreamingResponse

from worker import __version__
from worker.api.endpoint import Call, Endpoint, with_status
from worker.clock import now_ms, to_iso
from worker.errors import BadRequest, InsufficientStorage
from worker.ops.import_rows import row_check
from worker.settings import Settings
from worker.store import portability
from worker.store.db import AnyDb

TAG = "portability"
CHUNK_BYTES = 64 * 1024


def _export_file(call: Call) -> Path:
    """Write a consistent snapshot to a private temp file in the data dir (streamed, then removed)."""
    home = call.cairn.settings.home
    fd, name = tempfile.mkstemp(prefix=".export-", suffix=".jsonl", dir=home)
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            call.cairn.store.read_sync(
                lambda c: portability.export_to(
                    c, out.write, version=__version__, visible_to=call.cairn.reader
                )
            )
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


async def export(call: Call) -> Any:
    try:
        path = await anyio.to_thread.run_sync(_export_file, call)
    except OSError as exc:
        raise InsufficientStorage(
            f"cannot stage the export in {call.cairn.settings.home}: {exc}"
        ) from None

    async def stream() -> AsyncIterator[bytes]:
        try:
            async with await anyio.open_file(path, "rb") as handle:
                while chunk := await handle.read(CHUNK_BYTES):
                    yield chunk
        finally:
            path.unlink(missing_ok=True)

    stamp = to_iso(now_ms()) or "export"
    filename = "cairn-export-" + stamp.replace(":", "").replace("-", "").replace(".", "") + ".jsonl"
    return StreamingResponse(
        stream(),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


async def import_export(call: Call) -> Any:
    raw = await call.request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the body is not valid UTF-8 (byte {exc.start})", field="body") from None
    mode = call.query.get("on_conflict", "fail")
    check = row_check(call.cairn.settings)

    def write(conn: AnyDb) -> portability.ImportResult:
        lines = portability.split_lines(text)
        return portability.import_lines(conn, lines, check=check, on_conflict=mode)

    result = await call.cairn.store.write(write)
    for kind, ids in result.new_items.items():
        call.cairn.after_items(kind, ids)
    return with_status(result.as_dict(), 201 if result.inserted or result.replaced else 200)


async def create_backup(call: Call) -> Any:
    s = call.cairn.settings
    try:
        info = await call.cairn.store.read(
            lambda c: portability.backup(c, s.backups_dir, keep=s.database.backup_keep)
        )
    except (OSError, sqlite3.Error, RuntimeError) as exc:
        raise InsufficientStorage(f"the backup to {s.backups_dir} failed: {exc}") from None
    return with_status(info, 201)


async def list_backups(call: Call) -> Any:
    paths = await anyio.to_thread.run_sync(
        portability.list_backups, call.cairn.settings.backups_dir
    )
    items = []
    for path in paths:
        stat = path.stat()
        items.append(
            {
                "path": str(path),
                "bytes": stat.st_size,
                "modified_at": to_iso(int(stat.st_mtime * 1000)),
            }
        )
    return {"items": items}


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "GET",
            "/api/export",
            export,
            "Export every table as JSON lines (ids and times kept), streamed",
            TAG,
            raw_response=True,
            media_type="application/x-ndjson",
            description=(
                "Line 1 is a header {format, version, backend, migrations, tables, rows} "
                '(backend: "sqlite" or "postgres"); each next line is {table, row}. BLOBs are '
                '{"$b64": ...}. One consistent snapshot.'
            ),
        ),
        Endpoint(
            "POST",
            "/api/import",
            import_export,
            "Import an export (JSON lines body); re-importing changes nothing",
            TAG,
            query={"on_conflict": {"type": "string", "enum": ["fail", "skip", "replace"]}},
            status=201,
            extra_statuses=(200, 409),
            description=(
                f"The body is limited to max_body_bytes ({s.limits.max_body_bytes}); send a large "
                "export in chunks, each starting with the header line (`cairn import` does). "
                "A row whose key exists with other values is a conflict: fail (409, nothing "
                "written), skip (keep the stored row) or replace. Every row must meet the "
                "API's own rules (JSON columns parse, known types and kinds, times are "
                "integers): one that does not fails the whole request with a 400 naming its "
                "`line` and `field`, and nothing is written."
            ),
        ),
        Endpoint(
            "POST",
            "/api/backup",
            create_backup,
            "Back up the database (SQLite online backup) to $CAIRN_HOME/backups",
            TAG,
            status=201,
        ),
        Endpoint("GET", "/api/backups", list_backups, "List backups, newest first", TAG),
    ]
