"""Moving a local history into a team database: `cairn team push` and an export imported across
backends, same machine, same rows.

A local SQLite home is filled through the store modules (sessions, each with prompts, tool
observations, a summary, a checkpoint and memories), then: the push of everything (`--all`)
into an empty PostgreSQL database, the same push again (nothing to copy: the idempotence
check's cost), and the SQLite export imported into another empty PostgreSQL database. The
server is a throwaway local one (tests/pg.py) over loopback TCP with fsync off, as in the tests.

    python bench/team_push.py [--sessions 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Row, report
from tests import pg
from worker.ops.import_rows import row_check
from worker.ops.team_push import Push, PushOptions
from worker.settings import Settings
from worker.store import (
    Store,
    checkpoints,
    memories,
    observations,
    portability,
    projects,
    summaries,
)
from worker.store import sessions as session_rows
from worker.store.pg import PgStore

PER_SESSION = {"prompts": 3, "observations": 20, "memories": 2}


def fill(store: Store, n: int) -> int:
    """`n` sessions over 4 projects; the rows written."""
    for s in range(n):

        def write(c: Any, s: int = s) -> None:
            key = f"/home/dev/app{s % 4}"
            pid = projects.ensure(c, key)
            sid = f"session-{s}"
            session_rows.ensure(c, sid, pid, author="dev@example.com", started_at=1_000 + s)
            for p in range(PER_SESSION["prompts"]):
                session_rows.add_prompt(c, sid, pid, f"prompt {p} of {sid}: fix the cache", None)
            observations.insert_many(
                c,
                [
                    {"project": key, "session_id": sid, "type": "file_write",
                     "title": f"Edit src/module_{o}.py", "files": [f"src/module_{o}.py"],
                     "body": f"changed getUserById in {sid} step {o}"}
                    for o in range(PER_SESSION["observations"])
                ],
            )  # fmt: skip
            summaries.upsert(c, sid, pid, request=f"work of {sid}", completed=["done"],
                             files=["src/a.py"], learned=[f"lesson {s}"], next_steps=[])  # fmt: skip
            checkpoints.insert(c, sid, pid, trigger="stop", task=f"task {s}", progress=["a"],
                               next_steps=[], open_questions=[], files=[])  # fmt: skip
            for m in range(PER_SESSION["memories"]):
                memories.insert_row(c, pid, {"kind": "fact", "content": f"fact {m} of {sid}"})

        store.write_sync(write)
    return int(
        store.read_sync(
            lambda c: sum(
                c.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in (
                    "sessions",
                    "prompts",
                    "observations",
                    "summaries",
                    "checkpoints",
                    "memories",
                )
            )
        )
    )


def main() -> int:
    quick = os.environ.get("CAIRN_BENCH_QUICK") == "1"
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sessions", type=int, default=50 if quick else 200)
    args = parser.parse_args()
    found = pg.find_binaries()
    if not found:
        print(pg.SKIP_REASON)
        return 0
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        local = Store(Path(tmp) / "cairn.db")
        local.open()
        rows = fill(local, args.sessions)
        lines: list[str] = []
        local.read_sync(
            lambda c: portability.export_to(c, lines.append, version="bench", visible_to=None)
        )
        lines = portability.split_lines("".join(lines))
        server = pg.started(found[0])
        try:
            with server.database() as url:
                team = PgStore(url)
                team.open()
                options = PushOptions(prompts=True, observations=True, key_of=lambda k: k)
                for label in ("push, empty team database", "push again (nothing new)"):
                    start = time.perf_counter()
                    Push(local.read_sync, team.write_sync, options).run()
                    figures[label] = time.perf_counter() - start
                team.close()
            with server.database() as url:
                team = PgStore(url)
                team.open()
                check = row_check(Settings())
                start = time.perf_counter()
                team.write_sync(lambda c: portability.import_lines(c, lines, check=check))
                figures["export imported into PostgreSQL"] = time.perf_counter() - start
                team.close()
        finally:
            server.stop()
            local.close()
    table: list[Row] = [
        (f"{label} (s)", round(seconds, 2), f"{rows / seconds:.0f} rows/s", None)
        for label, seconds in figures.items()
    ]
    report(
        "team_push",
        f"a local history of {args.sessions} sessions ({rows} rows) into PostgreSQL "
        f"({found[0].source} {found[0].version})",
        table,
        {"sessions": args.sessions, "rows": rows, "seconds": figures},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
