"""`cairn install` / `cairn uninstall` on fixture settings files in a tmp HOME (never the real ~)."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from worker.cli import main
from worker.installer.claude_settings import EVENTS, HOOK_MARKER, merge_hooks, unmerge_hooks
from worker.installer.jsonfile import BACKUPS_KEPT
from worker.paths import hook_script

OTHER_TOOL = {
    "model": "claude-opus",
    "permissions": {"allow": ["Bash(git status)"], "deny": []},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Write|Edit",
                "hooks": [{"type": "command", "command": "prettier --write", "timeout": 30}],
            }
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}],
    },
    "env": {"FOO": "bär"},
}

FIXTURES: dict[str, str | None] = {
    "missing": None,
    "empty": "",
    "blank": "  \n",
    "empty-object": "{}\n",
    "other-tools": json.dumps(OTHER_TOOL, indent=2, ensure_ascii=False) + "\n",
    "four-spaces-no-newline": json.dumps(OTHER_TOOL, indent=4, ensure_ascii=False),
    "tabs": json.dumps(OTHER_TOOL, indent="\t") + "\n",
    "empty-hooks": '{\n  "hooks": {}\n}\n',
    "empty-event-list": '{\n  "hooks": {\n    "Stop": []\n  }\n}\n',
    # The user's own formatting: compact arrays and objects on one line, odd spacing, CRLF.
    "compact-arrays": (
        '{\n  "model": "opus",\n'
        '  "permissions": {"allow": ["Bash(git status)", "Read(./src/**)"], "deny": []},\n'
        '  "hooks": {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", '
        '"command": "prettier --write"}]}], "Stop" : [ ]},\n'
        '  "env": {"FOO": "b\u00e4r"}\n}\n'
    ),
    "minified": json.dumps(OTHER_TOOL, separators=(",", ":")),
    "crlf": json.dumps(OTHER_TOOL, indent=2).replace("\n", "\r\n") + "\r\n",
    # Saved by an editor that writes a byte-order mark: it stays (and the JSON stays readable).
    "utf8-bom": "\ufeff" + json.dumps(OTHER_TOOL, indent=2) + "\n",
}


def settings_path(user_home: Path) -> Path:
    return user_home / ".claude" / "settings.json"


def write_fixture(path: Path, text: str | None) -> None:
    if text is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def cairn(*args: str) -> int:
    return main([*args])


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".cairn-backup-*"))


@pytest.mark.parametrize("name", list(FIXTURES))
def test_install_then_uninstall_restores_the_file_byte_for_byte(
    name: str, user_home: Path, project_cwd: Path
) -> None:
    path = settings_path(user_home)
    original = FIXTURES[name]
    write_fixture(path, original)

    assert cairn("install", "--no-start") == 0
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") == (name == "utf8-bom")
    data = json.loads(raw.decode("utf-8-sig"))
    for event in EVENTS:
        groups = data["hooks"][event.name]
        ours = [g for g in groups if HOOK_MARKER in json.dumps(g)]
        assert len(ours) == 1, event.name
        handler = ours[0]["hooks"][0]
        assert handler["type"] == "command" and handler["timeout"] == event.timeout
        words = shlex.split(handler["command"])
        assert words[-1] == event.arg
        assert Path(words[-2]) == hook_script().resolve() and Path(words[-2]).is_absolute()
        assert os.path.isabs(words[-3]) and os.access(words[-3], os.X_OK)
        if event.matcher is None:
            assert "matcher" not in ours[0]
        else:
            assert ours[0]["matcher"] == event.matcher
    if name in ("other-tools", "four-spaces-no-newline", "tabs"):
        # Everything that was there is still there, in the same order, first.
        assert {k: v for k, v in data.items() if k != "hooks"} == {
            k: v for k, v in OTHER_TOOL.items() if k != "hooks"
        }
        assert data["hooks"]["PostToolUse"][0] == OTHER_TOOL["hooks"]["PostToolUse"][0]
        assert data["hooks"]["Notification"] == OTHER_TOOL["hooks"]["Notification"]

    assert cairn("uninstall") == 0
    if original is None:
        assert not path.exists()
        assert not path.parent.exists()  # ~/.claude was created by install: gone again
    else:
        assert path.read_bytes() == original.encode()


def test_install_is_idempotent_and_backs_up_once(user_home: Path, project_cwd: Path) -> None:
    path = settings_path(user_home)
    write_fixture(path, FIXTURES["other-tools"])
    assert cairn("install", "--no-start") == 0
    after_first = path.read_bytes()
    assert len(backups(path)) == 1
    assert backups(path)[0].read_text() == FIXTURES["other-tools"]
    mtime = path.stat().st_mtime_ns
    assert cairn("install", "--no-start") == 0
    assert path.read_bytes() == after_first
    assert path.stat().st_mtime_ns == mtime  # not rewritten at all
    assert len(backups(path)) == 1


def test_dry_run_shows_a_diff_and_writes_nothing(
    user_home: Path, project_cwd: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    path = settings_path(user_home)
    write_fixture(path, FIXTURES["other-tools"])
    assert cairn("install", "--dry-run", "--mcp", "--editor", "cursor") == 0
    out = capsys.readouterr().out
    assert f"--- {path}" in out and f"+++ {path}" in out
    assert '+            "command": ' in out and "cairn_hook.py session-start" in out
    assert "would create" in out and ".claude.json" in out
    assert path.read_text() == FIXTURES["other-tools"]
    assert not (user_home / ".claude.json").exists()
    assert not (user_home / ".cursor").exists()
    assert not (project_cwd / ".cursor").exists()
    assert backups(path) == []
    assert not (isolated_home / "install.json").exists()


def test_invalid_json_is_left_untouched_with_a_clear_error(
    user_home: Path, project_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = settings_path(user_home)
    broken = '{\n  "model": "opus",\n  "hooks": {\n'
    write_fixture(path, broken)
    assert cairn("install", "--no-start") == 1
    err = capsys.readouterr().err
    assert str(path) in err and "not valid JSON" in err and "line 4" in err
    assert path.read_text() == broken
    assert backups(path) == []
    assert cairn("uninstall") == 1
    assert path.read_text() == broken


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "expected an object"),
        ('{"hooks": []}', "'hooks' is a list"),
        ('{"hooks": {"Stop": {}}}', "hooks.Stop is a dict"),
    ],
)
def test_wrong_shapes_are_refused(
    text: str, message: str, user_home: Path, project_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = settings_path(user_home)
    write_fixture(path, text)
    assert cairn("install", "--no-start") == 1
    assert message in capsys.readouterr().err
    assert path.read_text() == text


def test_nothing_is_written_when_any_target_is_invalid(user_home: Path, project_cwd: Path) -> None:
    path = settings_path(user_home)
    write_fixture(path, FIXTURES["other-tools"])
    write_fixture(user_home / ".cursor" / "mcp.json", "{ not json")
    assert cairn("install", "--no-start", "--editor", "cursor") == 1
    assert path.read_text() == FIXTURES["other-tools"]


def test_an_old_install_is_replaced_in_place(user_home: Path, project_cwd: Path) -> None:
    old = {
        "hooks": {
            "PostToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]},
                {
                    "matcher": "*",
                    "hooks": [
                        {
                            "type": "command",
                            "command": "/old/python /old/cairn_hook.py post-tool-use",
                        }
                    ],
                },
                {"matcher": "Read", "hooks": [{"type": "command", "command": "audit"}]},
            ]
        }
    }
    path = settings_path(user_home)
    write_fixture(path, json.dumps(old, indent=2) + "\n")
    assert cairn("install", "--no-start") == 0
    groups = json.loads(path.read_text())["hooks"]["PostToolUse"]
    assert [g["matcher"] for g in groups] == ["Bash", "*", "Read"]
    assert "/old/" not in json.dumps(groups)
    assert str(hook_script().resolve()) in groups[1]["hooks"][0]["command"]


def test_uninstall_takes_our_handler_out_of_a_shared_group(
    user_home: Path, project_cwd: Path
) -> None:
    cmd = "python /x/cairn_hook.py stop"
    shared = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "say done"},
                        {"type": "command", "command": cmd},
                    ]
                }
            ]
        }
    }
    path = settings_path(user_home)
    write_fixture(path, json.dumps(shared, indent=2) + "\n")
    assert cairn("uninstall") == 0
    assert json.loads(path.read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }


def test_project_scope_writes_the_project_file(user_home: Path, project_cwd: Path) -> None:
    assert cairn("install", "--no-start", "--project") == 0
    assert (project_cwd / ".claude" / "settings.json").exists()
    assert not settings_path(user_home).exists()
    assert cairn("uninstall", "--project") == 0
    assert not (project_cwd / ".claude").exists()


def test_symlinked_settings_stay_a_symlink_and_mode_is_kept(
    user_home: Path, project_cwd: Path, tmp_path: Path
) -> None:
    target = tmp_path / "dotfiles" / "claude-settings.json"
    write_fixture(target, FIXTURES["other-tools"])
    target.chmod(0o600)
    link = settings_path(user_home)
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    assert cairn("install", "--no-start") == 0
    assert link.is_symlink()
    assert HOOK_MARKER in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert cairn("uninstall") == 0
    assert target.read_text() == FIXTURES["other-tools"]


def test_install_records_the_interpreter_for_the_hook(
    user_home: Path, project_cwd: Path, isolated_home: Path
) -> None:
    assert cairn("install", "--no-start") == 0
    state = json.loads((isolated_home / "install.json").read_text())
    assert os.access(state["python"], os.X_OK)
    assert state["hook"] == str(hook_script().resolve())
    command = json.loads(settings_path(user_home).read_text())["hooks"]["Stop"][0]["hooks"][0]
    # A non-default CAIRN_HOME travels with the command so the hook finds this data dir.
    assert command["command"].startswith(f"CAIRN_HOME={shlex.quote(str(isolated_home))} ")
    assert shlex.split(command["command"])[1] == state["python"]


def _mcp_entry(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text())["mcpServers"]["cairn"])


def test_mcp_for_claude_code_keeps_the_rest_of_claude_json(
    user_home: Path, project_cwd: Path
) -> None:
    claude_json = user_home / ".claude.json"
    original = json.dumps(
        {
            "numStartups": 41,
            "projects": {"/x": {"allowedTools": []}},
            "mcpServers": {"playwright": {"command": "npx", "args": ["@playwright/mcp@latest"]}},
        },
        indent=2,
    )
    write_fixture(claude_json, original)
    assert cairn("install", "--no-start", "--no-hooks", "--mcp") == 0
    data = json.loads(claude_json.read_text())
    assert data["numStartups"] == 41 and "playwright" in data["mcpServers"]
    entry = _mcp_entry(claude_json)
    assert entry["type"] == "stdio" and entry["args"] == ["-P", "-m", "worker", "mcp"]
    assert os.path.isabs(entry["command"])
    assert not settings_path(user_home).exists()
    assert cairn("uninstall") == 0
    assert claude_json.read_text() == original


def test_mcp_project_scope_uses_dot_mcp_json(user_home: Path, project_cwd: Path) -> None:
    assert cairn("install", "--no-start", "--no-hooks", "--mcp", "--project") == 0
    # .mcp.json is committed: `cairn mcp` from PATH, no interpreter path of this machine.
    assert _mcp_entry(project_cwd / ".mcp.json") == {
        "type": "stdio",
        "command": "cairn",
        "args": ["mcp"],
    }
    assert cairn("uninstall", "--project") == 0
    assert not (project_cwd / ".mcp.json").exists()


def test_a_foreign_server_named_cairn_is_not_overwritten(
    user_home: Path, project_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = user_home / ".cursor" / "mcp.json"
    text = '{"mcpServers": {"cairn": {"command": "npx", "args": ["cairn-js"]}}}'
    write_fixture(path, text)
    assert cairn("install", "--no-start", "--no-hooks", "--editor", "cursor") == 1
    assert "already exists and is not Cairn's" in capsys.readouterr().err
    assert path.read_text() == text


def test_hypothesis_free_helpers_round_trip_other_hooks() -> None:
    data = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}
    merged = merge_hooks(
        data, {"Stop": {"hooks": [{"type": "command", "command": "p cairn_hook.py stop"}]}}
    )
    assert unmerge_hooks(merged) == data


def test_local_scope_keeps_machine_paths_out_of_the_committed_file(
    user_home: Path, project_cwd: Path
) -> None:
    assert cairn("install", "--no-start", "--local") == 0
    assert (project_cwd / ".claude" / "settings.local.json").exists()
    assert not (project_cwd / ".claude" / "settings.json").exists()
    assert cairn("uninstall", "--project") == 0
    assert not (project_cwd / ".claude").exists()


def test_a_missing_hook_script_is_refused(
    user_home: Path,
    project_cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(
        "worker.cli.install.hook_script", lambda: project_cwd / "nope" / "cairn_hook.py"
    )
    assert cairn("install", "--no-start") == 1
    assert "is missing from this Cairn install" in capsys.readouterr().err
    assert not settings_path(user_home).exists()


def test_install_rewrites_only_what_it_adds(user_home: Path, project_cwd: Path) -> None:
    path = settings_path(user_home)
    original = FIXTURES["compact-arrays"]
    assert original is not None
    write_fixture(path, original)
    assert cairn("install", "--no-start") == 0
    text = path.read_text()
    # The user's compact lines are still there, byte for byte; ours follow the file's layout.
    for line in original.splitlines()[:3]:
        assert line in text.splitlines(), line
    assert '"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier' in text
    assert '"Stop" : [' in text
    crlf = FIXTURES["crlf"]
    assert crlf is not None
    write_fixture(path, crlf)
    assert cairn("install", "--no-start") == 0
    raw = path.read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n")  # new lines in the file's own line ending


def test_backups_are_reused_and_capped(
    user_home: Path, project_cwd: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = settings_path(user_home)
    write_fixture(path, FIXTURES["other-tools"])
    for _ in range(3):  # install/uninstall cycles: two contents, so two backups
        assert cairn("install", "--no-start") == 0
        assert cairn("uninstall") == 0
    assert [b.read_text() for b in backups(path)].count(FIXTURES["other-tools"]) == 1
    assert len(backups(path)) == 2
    # Each install with another data folder changes the command: a new content every time.
    for i in range(6):
        monkeypatch.setenv("CAIRN_HOME", str(tmp_path / f"home-{i}"))
        before = path.read_text()
        assert cairn("install", "--no-start") == 0
        kept = backups(path)
        assert len(kept) <= BACKUPS_KEPT
        assert max(kept, key=lambda b: b.stat().st_mtime_ns).read_text() == before
