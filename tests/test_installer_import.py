"""`cairn install` offers the Claude Code history import: counted cheaply, asked on a terminal
only, `--yes` for scripts; transcripts in a tmp HOME (never the real ~/.claude). The import itself
through a real worker is in tests/e2e/test_install_e2e.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from worker.cli import install as install_cli
from worker.cli import main
from worker.imports.census import count_history, transcript_folder, user_lines
from worker.imports.state import FileMark, ImportState


def line(kind: str, sid: str, cwd: str, content: object, **extra: object) -> str:
    role = "assistant" if kind == "assistant" else "user"
    record = {
        "type": kind,
        "sessionId": sid,
        "cwd": cwd,
        "timestamp": "2026-01-02T03:04:05.000Z",
        "uuid": f"{sid}-{kind}-{len(json.dumps(content))}",
        "message": {"role": role, "content": content},
        **extra,
    }
    return json.dumps(record, separators=(",", ":")) + "\n"


def session_lines(sid: str, cwd: str, calls: int) -> str:
    """The shape the CLI writes: a prompt, then tool_use / tool_result pairs."""
    out = [line("user", sid, cwd, "fix the flaky test", promptId="p1")]
    for i in range(calls):
        tid = f"toolu_{sid[:4]}_{i}"
        use = {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"make t{i}"}}
        out.append(line("assistant", sid, cwd, [use]))
        result = {"type": "tool_result", "tool_use_id": tid, "content": "ok"}
        out.append(line("user", sid, cwd, [result], toolUseResult={"stdout": "ok"}))
    return "".join(out)


def write_history(user_home: Path, sessions: dict[str, tuple[str, int]]) -> Path:
    """sessions: id -> (cwd, tool calls). Returns the projects folder."""
    root = user_home / ".claude" / "projects"
    for sid, (cwd, calls) in sessions.items():
        folder = root / transcript_folder(Path(cwd))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sid}.jsonl").write_text(session_lines(sid, cwd, calls))
    return root


HISTORY = {
    "00000000-0000-4000-8000-000000000001": ("/work/alpha", 3),
    "00000000-0000-4000-8000-000000000002": ("/work/alpha", 2),
    "00000000-0000-4000-8000-000000000003": ("/work/beta", 4),
}


@pytest.fixture(autouse=True)
def no_claude_config_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def imports(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Calls of the import (the worker and the real import are the e2e test's)."""
    calls: list[dict[str, Any]] = []

    def fake_run_import(settings: Any, **kwargs: Any) -> Any:
        from worker.imports.run import Totals

        calls.append(kwargs)
        return Totals(sessions=3)

    import worker.cli.imports as imports_cli

    monkeypatch.setattr(imports_cli, "run_import", fake_run_import)
    monkeypatch.setattr(install_cli, "_start_worker", lambda settings: 0)
    return calls


def test_the_count_is_sessions_project_folders_and_user_lines(
    user_home: Path, tmp_path: Path
) -> None:
    root = write_history(user_home, HISTORY)
    history = count_history(root, ImportState(tmp_path / "state.json"))
    # A prompt and one result per tool call: the events the import stores for these sessions.
    assert (history.sessions, history.projects, history.events) == (3, 2, 3 + 1 + 2 + 1 + 4 + 1)
    assert history.line() == "found 3 Claude Code sessions in 2 projects, ~12 events"


def test_imported_files_are_not_counted_and_grown_ones_only_past_their_mark(
    user_home: Path, tmp_path: Path
) -> None:
    root = write_history(user_home, HISTORY)
    state = ImportState(tmp_path / "state.json")
    files = sorted(root.rglob("*.jsonl"))
    for path in files:
        st = path.stat()
        state.mark(path, FileMark(st.st_size, st.st_mtime_ns, st.st_size))
    assert count_history(root, state).sessions == 0
    grown = files[0]
    sid = grown.stem
    with grown.open("a") as handle:
        handle.write(session_lines(sid, "/work/alpha", 1))
    history = count_history(root, state)
    assert (history.sessions, history.projects, history.events) == (1, 1, 2)


def test_a_user_line_split_across_read_chunks_is_counted_once(tmp_path: Path) -> None:
    from worker.imports import census

    path = tmp_path / "t.jsonl"
    pad = b"x" * (census.CHUNK - 5)
    path.write_bytes(pad + b'{"type":"user"}\n{"type":"user"}\n')
    assert user_lines(path) == 2
    # Written with spaces (json.dumps), and a compact one ending right at a chunk's end.
    spaced = b'{"type": "user"}\n' * 3
    path.write_bytes(b"x" * (census.CHUNK - 14) + b'"type":"user"' + b"\n" + spaced)
    assert user_lines(path) == 4


def test_project_install_counts_that_project_and_its_subfolders(
    user_home: Path, tmp_path: Path
) -> None:
    root = write_history(
        user_home,
        {
            **HISTORY,
            "00000000-0000-4000-8000-000000000004": ("/work/alpha/sub", 1),
            "00000000-0000-4000-8000-000000000005": ("/work/alphabet", 1),
        },
    )
    history = count_history(root, ImportState(tmp_path / "s.json"), Path("/work/alpha"))
    assert (history.sessions, history.projects) == (3, 2)


def test_on_a_terminal_the_user_is_asked_and_yes_imports(
    user_home: Path,
    project_cwd: Path,
    imports: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_history(user_home, HISTORY)
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert main(["install"]) == 0
    out = capsys.readouterr().out
    assert "found 3 Claude Code sessions in 2 projects, ~12 events; import now? [y/N]" in out
    assert imports == [{"project": None}]
    assert "imported 3 sessions" in out


@pytest.mark.parametrize("answer", ["\n", "n\n", "no\n", ""])
def test_anything_but_yes_imports_nothing_and_says_how_to_later(
    answer: str,
    user_home: Path,
    project_cwd: Path,
    imports: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_history(user_home, HISTORY)
    monkeypatch.setattr("sys.stdin", Terminal(answer))
    assert main(["install"]) == 0
    assert imports == []
    assert "not imported; run `cairn import claude-code` any time" in capsys.readouterr().out


def test_without_a_terminal_nothing_is_asked_and_the_way_to_import_is_printed(
    user_home: Path,
    project_cwd: Path,
    imports: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_history(user_home, HISTORY)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # piped: a "y" here is not an answer
    assert main(["install"]) == 0
    out = capsys.readouterr().out
    assert imports == []
    assert "import now?" not in out
    assert "~12 events; import them any time with `cairn import claude-code`" in out


def test_yes_imports_without_asking_even_without_a_terminal(
    user_home: Path,
    project_cwd: Path,
    imports: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_history(user_home, HISTORY)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["install", "--yes"]) == 0
    assert imports == [{"project": None}]
    assert "import now?" not in capsys.readouterr().out


def test_a_project_install_offers_that_project_only(
    user_home: Path,
    project_cwd: Path,
    imports: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_history(
        user_home, {**HISTORY, "00000000-0000-4000-8000-000000000009": (str(project_cwd), 2)}
    )
    assert main(["install", "--project", "--yes"]) == 0
    assert imports == [{"project": str(project_cwd)}]
    assert "found 1 Claude Code session in 1 project, ~3 events" in capsys.readouterr().out


def test_no_history_no_start_or_no_hooks_asks_nothing(
    user_home: Path,
    project_cwd: Path,
    imports: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert main(["install"]) == 0  # no ~/.claude/projects at all
    assert "found" not in capsys.readouterr().out
    write_history(user_home, HISTORY)
    assert main(["install", "--no-hooks"]) == 0
    assert "found" not in capsys.readouterr().out
    assert main(["install", "--no-start", "--yes"]) == 0  # the import needs the worker
    assert "import them any time with `cairn import claude-code`" in capsys.readouterr().out
    assert main(["install", "--dry-run"]) == 0
    assert "found" not in capsys.readouterr().out
    assert imports == []
