"""Hook times through the real Claude Code CLI, beside the same hook commands run directly.

For each pinned CLI (tests/e2e/claude_code.py; `make claude-code` installs them): `cairn install`
into a throwaway HOME, then `--sessions` scripted sessions against the local Messages API stand-in
(tests/e2e/messages_api.py), each with a prompt, Read, Bash, Edit and a failing Bash. The CLI's
debug log gives each hook's time as the CLI saw it (2.1.332 logs `Hooks: <event> [cmd] finished
with status 0 (N ms)`; 2.1.197 logs no times, so only its session wall time is reported). Beside
it, the installed command lines run directly through /bin/sh with the same kind of payload: our
own process time, no CLI around it.
Run: `.venv/bin/python bench/hooks_cli.py [--sessions N]`. Writes bench/results/hooks_cli.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import percentile, print_table, write_result  # noqa: E402
from tests.e2e.claude_code import (  # noqa: E402
    CLAUDE_CODE_VERSIONS,
    claude_binary,
    offline_env,
    run_claude,
)
from tests.e2e.messages_api import MessagesAPI, Text, ToolUse  # noqa: E402
from tests.e2e.worker_process import free_port  # noqa: E402

HOOK_TIME_RE = re.compile(r"Hooks: (\w+)(?::\S*)? \[(.*?)\] finished with status \d+ \((\d+)ms\)")


def script(repo: Path, i: int) -> list[list[Text | ToolUse]]:
    calc = str(repo / "calc.py")
    return [
        [ToolUse("Read", {"file_path": calc})],
        [ToolUse("Bash", {"command": f"python3 -c 'print({i})'"})],
        [ToolUse("Edit", {"file_path": calc, "old_string": f"# {i}", "new_string": f"# {i + 1}"})],
        [ToolUse("Bash", {"command": "python3 -c 'raise SystemExit(3)'"})],
        [Text(f"Session {i} done.")],
    ]


def cairn_commands(settings: Path) -> dict[str, str]:
    data = json.loads(settings.read_text())
    return {event: groups[0]["hooks"][0]["command"] for event, groups in data["hooks"].items()}


def direct_times(
    commands: dict[str, str], env: dict[str, str], repo: Path, runs: int
) -> dict[str, list[float]]:
    """The installed command lines run as Claude Code runs them (sh -c, JSON on stdin)."""
    common = {
        "session_id": "bench-direct",
        "transcript_path": str(repo / "t.jsonl"),
        "cwd": str(repo),
    }
    payloads = {
        "SessionStart": {"hook_event_name": "SessionStart", "source": "startup"},
        "UserPromptSubmit": {
            "hook_event_name": "UserPromptSubmit",
            "prompt": "why did calc.add fail?",
        },
        "PostToolUse": {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "python3 -c 'print(1)'"},
            "tool_response": {"stdout": "1", "stderr": "", "interrupted": False},
        },
        "PostToolUseFailure": {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": "python3 -c 'raise SystemExit(3)'"},
            "error": "Exit code 3",
            "is_interrupt": False,
        },
        "Stop": {"hook_event_name": "Stop", "stop_hook_active": False},
    }
    times: dict[str, list[float]] = {}
    for event, body in payloads.items():
        for i in range(runs):
            payload = {**common, **body, "tool_use_id": f"toolu_direct_{event}_{i}"}
            start = time.perf_counter()
            subprocess.run(
                ["/bin/sh", "-c", commands[event]],
                input=json.dumps(payload).encode(),
                env=env,
                cwd=repo,
                capture_output=True,
                timeout=60,
            )
            times.setdefault(event, []).append((time.perf_counter() - start) * 1000)
    return times


def bench_version(version: str, sessions: int, tmp: Path) -> dict[str, Any] | None:
    binary = claude_binary(version)
    if binary is None:
        print(f"Claude Code {version} is not installed (make claude-code): skipped")
        return None
    home, cairn_home, repo = tmp / version / "home", tmp / version / "cairn", tmp / version / "repo"
    home.mkdir(parents=True)
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text("".join(f"# {i}\n" for i in range(sessions + 1)))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "CLAUDE"))}
    env.update({"HOME": str(home), "CAIRN_HOME": str(cairn_home), "CAIRN_PORT": str(free_port())})
    subprocess.run(
        [sys.executable, "-P", "-m", "worker", "install"],
        env=env,
        cwd=tmp,
        check=True,
        capture_output=True,
        timeout=300,
    )
    api = MessagesAPI().start()
    cli_times: dict[str, list[float]] = {}
    walls: list[float] = []
    try:
        for i in range(sessions):
            api.script(script(repo, i))
            debug = tmp / version / f"debug-{i}.log"
            start = time.perf_counter()
            result = run_claude(
                binary,
                ["-p", f"session {i}: tidy calc.py", "--debug-file", str(debug)],
                cwd=repo,
                env=offline_env(env, api.url),
            )
            walls.append((time.perf_counter() - start) * 1000)
            if result.returncode != 0:
                raise SystemExit(
                    f"claude {version} exited {result.returncode}: {result.stderr[-400:]}"
                )
            text = debug.read_text(errors="replace") if debug.exists() else ""
            for event, command, ms in HOOK_TIME_RE.findall(text):
                if "cairn_hook" in command or "cairn hook" in command:
                    cli_times.setdefault(event, []).append(float(ms))
        direct = direct_times(cairn_commands(home / ".claude" / "settings.json"), env, repo, 10)
    finally:
        api.stop()
        info = cairn_home / "worker.json"
        if info.exists():
            os.kill(int(json.loads(info.read_text())["pid"]), signal.SIGTERM)
    return {"version": version, "session_wall_ms": walls, "cli": cli_times, "direct": direct}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-hooks-cli-"))
    results = []
    rows: list[tuple[str, Any, str, bool | None]] = []
    try:
        for version in CLAUDE_CODE_VERSIONS:
            out = bench_version(version, args.sessions, tmp)
            if out is None:
                continue
            results.append(out)
            rows.append(
                (f"{version} session wall ms p50", percentile(out["session_wall_ms"], 50), "", None)
            )
            for event in sorted(set(out["cli"]) | set(out["direct"])):
                cli, direct = out["cli"].get(event, []), out["direct"].get(event, [])
                if cli:
                    rows.append(
                        (
                            f"{version} {event} ms p50 / p95 as the CLI reports",
                            f"{percentile(cli, 50):.0f} / {percentile(cli, 95):.0f} (n={len(cli)})",
                            "",
                            None,
                        )
                    )
                if direct:
                    rows.append(
                        (
                            f"{version} {event} ms p50 / p95 run directly",
                            f"{percentile(direct, 50):.0f} / {percentile(direct, 95):.0f} (n={len(direct)})",
                            "",
                            None,
                        )
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table("Hooks through the real Claude Code CLI (ms)", rows)
    write_result(
        "hooks_cli",
        {
            "versions": results,
            "figures": [{"figure": f, "value": v, "aim": a, "met": m} for f, v, a, m in rows],
        },
    )


if __name__ == "__main__":
    main()
