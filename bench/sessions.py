"""Session summaries, checkpoints, project profile, report and portability on a real SQLite file.

Figures: the Stop work (summary + checkpoint) for sessions of 100 / 1,000 / 5,000 observations,
the profile computed cold and served from its cache, the activity report, export and import
throughput (rows/s) and an online backup. Medians over repeated runs; nothing here is asserted.
Run: `.venv/bin/python bench/sessions.py` (`--quick` for a smaller run). Writes
bench/results/sessions.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import print_table, write_result  # noqa: E402
from worker.clock import now_ms  # noqa: E402
from worker.memory.checkpoint import build_checkpoint  # noqa: E402
from worker.memory.profile import compute_profile, load_profile, refresh_profile  # noqa: E402
from worker.memory.summary import build_summary  # noqa: E402
from worker.ops.import_rows import row_check  # noqa: E402
from worker.ops.report import make_report  # noqa: E402
from worker.settings import load_settings  # noqa: E402
from worker.store import Store, observations, portability, projects, sessions, summaries  # noqa: E402

PROJECT = "/home/dev/bench-shop"
FOLDERS = ["src", "tests", "web", "docs", "scripts"]
EXTS = [".py", ".py", ".py", ".ts", ".md", ".sql"]
COMMANDS = ["pytest -q", "ruff check .", "npm run build", "make", "git status", "mypy worker"]


def median_ms(fn: Callable[[], Any], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def fill(store: Store, sizes: list[int], background: int, rng: random.Random) -> dict[str, int]:
    """Sessions of the given sizes plus `background` observations spread over other sessions."""
    base = now_ms() - 3 * 86_400_000

    def write(conn: Any) -> dict[str, int]:
        pid = projects.ensure(conn, PROJECT)
        made: dict[str, int] = {}
        plan = [{"content": f"step {i}", "status": rng.choice(["completed", "pending"])}
                for i in range(8)]  # fmt: skip
        specs = [(f"bench-{n}", n) for n in sizes]
        per_bg = 500
        specs += [(f"bg-{i}", per_bg) for i in range(background // per_bg)]
        t = base
        for sid, count in specs:
            sessions.ensure(conn, sid, pid, started_at=t)
            sessions.set_plan(conn, sid, plan)
            for p in range(3):
                sessions.add_prompt(conn, sid, pid, f"Task {sid} part {p}: improve the cart", t)
            for _ in range(count):
                t += 1000
                kind = rng.choice(["file_write", "file_write", "command", "research"])
                path = f"{PROJECT}/{rng.choice(FOLDERS)}/m{rng.randint(0, 300)}{rng.choice(EXTS)}"
                item: dict[str, Any] = {
                    "project": PROJECT,
                    "session_id": sid,
                    "type": kind,
                    "title": f"Edit {path}" if kind != "command" else "Run: tests",
                    "body": "x" * 200,
                    "files": [path] if kind != "command" else [],
                    "created_at_ms": t,
                    "meta": {"source": "claude-code"},
                }
                if kind == "command":
                    command = rng.choice(COMMANDS)
                    code = rng.choice([0, 0, 0, 1])
                    item["body"] = f"command: {command}\nexit code: {code}"
                observations.insert(conn, item)
            made[sid] = count
        return made

    return store.write_sync(write)


def stop_work(store: Store, sid: str) -> None:
    def write(conn: Any) -> None:
        activity = summaries.session_activity(conn, sid, visible_to=None)
        assert activity is not None
        session = activity["session"]
        draft = build_summary(
            activity["prompts"], activity["observations"], plan=session["plan"],
            last_assistant_message="Done. The root cause was a stale cache.", root=PROJECT,
        )  # fmt: skip
        summaries.upsert(
            conn, sid, session["project_id"], request=draft.request, completed=draft.completed,
            files=draft.files, learned=draft.learned, next_steps=draft.next_steps,
        )  # fmt: skip
        build_checkpoint(activity["prompts"], activity["observations"], plan=session["plan"],
                         root=PROJECT)  # fmt: skip

    store.write_sync(write)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer runs")
    args = parser.parse_args()
    rng = random.Random(7)
    sizes = [100, 1000] if args.quick else [100, 1000, 5000]
    background = 2_000 if args.quick else 20_000
    runs = 3 if args.quick else 7
    rows: list[tuple[str, Any, str, bool | None]] = []
    result: dict[str, Any] = {"quick": args.quick, "runs": runs}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        settings = load_settings(home=home)
        store = Store(settings.db_path)
        store.open()
        fill(store, sizes, background, rng)
        pid = store.read_sync(lambda c: projects.find(c, PROJECT))
        assert pid is not None

        for n in sizes:
            ms = median_ms(lambda n=n: stop_work(store, f"bench-{n}"), runs)
            aim = 100.0 if n <= 1000 else 400.0
            rows.append((f"Stop: summary+checkpoint, {n} obs (ms)", ms, f"< {aim:.0f}", ms < aim))
            result[f"stop_ms_{n}"] = ms

        cold = median_ms(
            lambda: store.read_sync(lambda c: compute_profile(c, pid, reader=None)), runs
        )
        store.write_sync(lambda c: refresh_profile(c, pid, settings, reader=None, force=True))
        cached = median_ms(
            lambda: store.read_sync(lambda c: load_profile(c, pid, settings, reader=None)), runs
        )
        rows.append(("profile computed cold (ms)", cold, "< 100", cold < 100))
        rows.append(("profile from cache (ms)", cached, "< 10", cached < 10))
        result.update(profile_cold_ms=cold, profile_cached_ms=cached)

        report = median_ms(
            lambda: store.read_sync(lambda c: make_report(c, settings, PROJECT, "7d", None)), runs
        )
        rows.append(("activity report, 7 days (ms)", report, "< 500", report < 500))
        result["report_ms"] = report

        lines: list[str] = []
        started = time.perf_counter()
        store.read_sync(
            lambda c: portability.export_to(c, lines.append, version="bench", visible_to=None)
        )
        export_s = time.perf_counter() - started
        exported = len(lines) - 1
        export_rate = exported / export_s
        rows.append(
            (f"export rows/s ({exported:,} rows)", export_rate, "> 10,000", export_rate > 10_000)
        )

        check = row_check(settings)  # the API's row rules, as every import runs them
        target = Store(Path(tmp) / "copy" / "cairn.db")
        target.open()
        started = time.perf_counter()
        target.write_sync(lambda c: portability.import_lines(c, lines, check=check))
        import_s = time.perf_counter() - started
        import_rate = exported / import_s
        rows.append(("import rows/s (fresh home)", import_rate, "> 2,000", import_rate > 2_000))
        started = time.perf_counter()
        again = target.write_sync(lambda c: portability.import_lines(c, lines, check=check))
        reimport_rate = exported / (time.perf_counter() - started)
        assert again.inserted == 0 and again.unchanged == exported
        rows.append(("re-import rows/s (all unchanged)", reimport_rate, "", None))
        target.close()

        started = time.perf_counter()
        info = store.read_sync(lambda c: portability.backup(c, home / "backups"))
        backup_s = time.perf_counter() - started
        mb = info["bytes"] / 1e6
        rows.append((f"online backup ({mb:.1f} MB) seconds", backup_s, "< 5", backup_s < 5))
        result.update(
            export_rows=exported,
            export_rows_per_s=export_rate,
            import_rows_per_s=import_rate,
            reimport_rows_per_s=reimport_rate,
            backup_seconds=backup_s,
            backup_mb=mb,
        )
        store.close()

    print_table("Sessions, profile, report and portability", rows)
    result["figures"] = [
        {"figure": name, "value": value, "aim": aim, "met": met} for name, value, aim, met in rows
    ]
    write_result("sessions", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
