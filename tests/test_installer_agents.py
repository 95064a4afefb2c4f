"""`cairn install --agent ...` for Codex CLI, Gemini CLI, Copilot CLI and Cursor in a tmp HOME.

Each agent's file keeps what the user had (other tools' hooks, other settings, its layout);
installing twice changes nothing; uninstall gives every file back byte for byte. Whether the
agents run what is written is the real-CLI tests' part (tests/e2e/test_<agent>_cli.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.cli import main
from worker.installer import agent_hooks
from worker.installer.claude_settings import registered_commands

CODEX_CONFIG = 'model = "gpt-5.5"\n\n[projects."/src/app"]\ntrust_level = "trusted"\n'
THEIRS = {
    "codex": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}},
    "gemini": {
        "theme": "GitHub",
        "hooks": {
            "AfterTool": [
                {"matcher": "write_file", "hooks": [{"type": "command", "command": "fmt"}]}
            ]
        },
    },
    "cursor": {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}},
}


def files(home: Path) -> dict[str, Path]:
    return {
        "codex": home / ".codex" / "hooks.json",
        "codex-config": home / ".codex" / "config.toml",
        "gemini": home / ".gemini" / "settings.json",
        "copilot": home / ".copilot" / "hooks" / "cairn.json",
        "cursor": home / ".cursor" / "hooks.json",
    }


def seed(home: Path) -> dict[str, str | None]:
    paths = files(home)
    for agent, content in THEIRS.items():
        paths[agent].parent.mkdir(parents=True, exist_ok=True)
        paths[agent].write_text(json.dumps(content, indent=2) + "\n")
    paths["codex-config"].write_text(CODEX_CONFIG)
    return {k: (p.read_text() if p.exists() else None) for k, p in paths.items()}


def install(*args: str) -> int:
    return main(["install", "--no-start", *args])


def test_every_agent_is_installed_beside_what_was_there_and_uninstalled_exactly(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = seed(user_home)
    assert install("--agent", "all") == 0
    out = capsys.readouterr().out
    assert "Codex CLI hooks" in out and "Codex CLI hook trust" in out
    paths = files(user_home)
    for agent in agent_hooks.OTHER_AGENTS:
        data = json.loads(paths[agent].read_text())
        spec = agent_hooks.SPECS[agent]
        hooks = data["hooks"]
        assert set(hooks) >= {e.name for e in spec.events}, agent
        commands = [
            (h.get("command") or h.get("bash"))
            for e in spec.events
            for h in (hooks[e.name] if spec.shape == "flat" else hooks[e.name][-1]["hooks"])
        ]
        assert all(f"--agent {agent}" in c and "cairn_hook.py" in c for c in commands), commands
    # What the user had is still there.
    gemini = json.loads(paths["gemini"].read_text())
    assert gemini["theme"] == "GitHub"
    assert gemini["hooks"]["AfterTool"][0]["hooks"][0]["command"] == "fmt"
    assert gemini["hooks"]["AfterTool"][-1]["hooks"][0]["timeout"] == 5000  # milliseconds
    cursor = json.loads(paths["cursor"].read_text())
    assert cursor["hooks"]["afterFileEdit"] == [{"command": "./format.sh"}]
    copilot = json.loads(paths["copilot"].read_text())
    assert copilot["version"] == 1
    assert copilot["hooks"]["PostToolUse"][0]["type"] == "command"
    assert copilot["hooks"]["PostToolUse"][0]["timeoutSec"] == 5
    config = paths["codex-config"].read_text()
    assert config.startswith(CODEX_CONFIG)
    codex = json.loads(paths["codex"].read_text())
    assert codex["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"
    # One trust table per handler of ours, keyed by its place in the file (Stop: group 1).
    assert f'[hooks.state."{paths["codex"]}:stop:1:0"]' in config
    assert f'[hooks.state."{paths["codex"]}:stop:0:0"]' not in config  # not the user's hook
    assert config.count("trusted_hash") == len(agent_hooks.SPECS["codex"].events)
    # Again: nothing changes.
    snapshot = {k: p.read_text() for k, p in paths.items()}
    assert install("--agent", "all") == 0
    assert {k: p.read_text() for k, p in paths.items()} == snapshot
    assert "unchanged" in capsys.readouterr().out
    # Uninstall: every file as it was (the Copilot file of ours is gone).
    assert main(["uninstall"]) == 0
    after = {k: (p.read_text() if p.exists() else None) for k, p in paths.items()}
    assert after == before


def test_files_created_by_install_go_with_uninstall(user_home: Path) -> None:
    assert install("--agent", "codex", "--agent", "cursor", "--agent", "copilot") == 0
    paths = files(user_home)
    assert paths["codex"].exists() and paths["cursor"].exists() and paths["copilot"].exists()
    assert not paths["gemini"].exists()
    assert "trusted_hash" in paths["codex-config"].read_text()
    assert not (user_home / ".claude" / "settings.json").exists()  # only the agents named
    assert main(["uninstall"]) == 0
    assert not any(p.exists() for p in paths.values())
    assert not (user_home / ".copilot").exists()  # the folders install made go too


def test_project_install_writes_portable_commands(
    user_home: Path, project_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert install("--project", "--agent", "all") == 0
    written = {
        "codex": project_cwd / ".codex" / "hooks.json",
        "gemini": project_cwd / ".gemini" / "settings.json",
        "copilot": project_cwd / ".github" / "hooks" / "cairn.json",
        "cursor": project_cwd / ".cursor" / "hooks.json",
    }
    for agent, path in written.items():
        text = path.read_text()
        assert f"cairn hook session-start --agent {agent}" in text, agent
        assert "cairn_hook.py" not in text and str(user_home) not in text, agent
    # Codex trusts a project's hooks in the user's config.toml, by that file's path.
    config = (user_home / ".codex" / "config.toml").read_text()
    assert f'[hooks.state."{written["codex"]}:session_start:0:0"]' in config
    assert main(["uninstall", "--project"]) == 0
    assert not any(p.exists() for p in written.values())
    assert not (user_home / ".codex" / "config.toml").exists()  # install made it for the trust


def test_a_broken_agent_file_is_named_and_nothing_is_written(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = files(user_home)["gemini"]
    broken.parent.mkdir(parents=True)
    broken.write_text('{"hooks": [1, 2]}\n')
    assert install("--agent", "gemini", "--agent", "codex") == 1
    assert "'hooks' is a list" in capsys.readouterr().err
    assert broken.read_text() == '{"hooks": [1, 2]}\n'
    assert not files(user_home)["codex"].exists()  # all or nothing


def test_without_agent_other_agents_found_are_offered(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (user_home / ".gemini").mkdir()
    assert install() == 0  # not a terminal: Claude Code only, and a hint
    out = capsys.readouterr().out
    assert "found Gemini CLI too: `cairn install --agent all`" in out
    assert not files(user_home)["gemini"].exists()
    assert install("--yes") == 0
    data = json.loads(files(user_home)["gemini"].read_text())
    assert registered_commands(data)
