"""Find and run the real `claude` CLI (npm @anthropic-ai/claude-code) for end-to-end tests.

`make test` installs the pinned versions below into .cache/claude-code/<version>/ (see the
Makefile's claude-code target); CAIRN_TEST_CLAUDE_DIR points elsewhere. When a version could not
be installed, the install step leaves `<version>.unavailable` with npm's error, and the tests for
that version skip with it as the reason.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def pinned_versions() -> tuple[str, ...]:
    """The oldest and the newest Claude Code we support, from the Makefile that installs them."""
    for line in (REPO / "Makefile").read_text().splitlines():
        if line.startswith("CLAUDE_CODE_VERSIONS :="):
            return tuple(line.split(":=", 1)[1].split())
    raise RuntimeError("the Makefile has no CLAUDE_CODE_VERSIONS line")


CLAUDE_CODE_VERSIONS = pinned_versions()


# Read once, when the tests are collected: every test's autouse isolation (tests/conftest.py)
# drops CAIRN_* variables before its fixtures run, so reading it there always saw nothing.
CLI_DIR = Path(os.environ.get("CAIRN_TEST_CLAUDE_DIR") or REPO / ".cache" / "claude-code")


def cli_dir() -> Path:
    return CLI_DIR


def claude_binary(version: str) -> Path | None:
    path = cli_dir() / version / "node_modules" / ".bin" / "claude"
    return path if path.exists() and os.access(path, os.X_OK) else None


def missing_reason(version: str) -> str:
    note = cli_dir() / f"{version}.unavailable"
    detail = note.read_text(errors="replace").strip()[-400:] if note.exists() else ""
    return (
        f"Claude Code {version} is not installed under {cli_dir()} "
        f"(`make claude-code` installs it from the npm registry){': ' + detail if detail else ''}"
    )


def offline_env(base: Mapping[str, str], api_url: str) -> dict[str, str]:
    """The CLI pointed at the local Messages API stand-in, with no other traffic."""
    env = dict(base)
    env.update(
        {
            "ANTHROPIC_BASE_URL": api_url,
            "ANTHROPIC_API_KEY": "sk-test-local",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
    )
    return env


ALLOWED_TOOLS = "Bash Read Edit Write Grep Glob Agent TaskCreate TaskUpdate TaskGet TaskList"


def run_claude(
    binary: Path,
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`claude -p ...` in print mode with stream-json output; hooks run as in any session."""
    return subprocess.run(
        [
            str(binary),
            *args,
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            ALLOWED_TOOLS,
        ],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
