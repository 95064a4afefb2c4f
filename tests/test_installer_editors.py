"""`cairn install --editor cursor|windsurf|cline`: MCP config + rules, merged and removed safely."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.cli import main
from worker.cli.install import rules_text_path
from worker.installer import textblock
from worker.installer.editors import cline_mcp_paths, editor_targets


def _entry(path: Path) -> dict[str, object]:
    return dict(json.loads(path.read_text())["mcpServers"]["cairn"])


def test_cursor_gets_global_mcp_and_a_project_rule(user_home: Path, project_cwd: Path) -> None:
    other = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}
    mcp = user_home / ".cursor" / "mcp.json"
    mcp.parent.mkdir()
    original = json.dumps(other, indent=2) + "\n"
    mcp.write_text(original)
    assert main(["install", "--no-start", "--no-hooks", "--editor", "cursor"]) == 0
    assert _entry(mcp)["args"] == ["-P", "-m", "worker", "mcp"]
    assert "github" in json.loads(mcp.read_text())["mcpServers"]
    assert main(["install", "--no-start", "--no-hooks", "--project", "--editor", "cursor"]) == 0
    rule = project_cwd / ".cursor" / "rules" / "cairn.mdc"
    text = rule.read_text()
    assert text.startswith("---\ndescription:") and "alwaysApply: true" in text
    assert "get_observations" in text and textblock.MANAGED in text
    assert main(["uninstall"]) == 0
    assert mcp.read_text() == original
    assert not (project_cwd / ".cursor").exists()


def test_user_wide_rules_never_land_in_the_current_directory(
    user_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A user-wide install run from some unrelated folder (say Cairn's own clone)."""
    (user_home / "Documents").mkdir()
    elsewhere = tmp_path / "some-clone"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    editors = ["--editor", "cursor", "--editor", "windsurf", "--editor", "cline"]
    assert main(["install", "--no-start", "--no-hooks", *editors]) == 0
    assert list(elsewhere.iterdir()) == []
    out = capsys.readouterr().out
    # Cursor has no file for user-wide rules: the output says so and what to do instead.
    assert "Cursor keeps user-wide rules in Cursor Settings > Rules > User Rules" in out
    assert "no rules file written" in out and "cairn install --project --editor cursor" in out
    assert str(rules_text_path()) in out
    windsurf = user_home / ".codeium" / "windsurf" / "memories" / "global_rules.md"
    assert textblock.BEGIN in windsurf.read_text()
    assert (
        "resume_session" in (user_home / "Documents" / "Cline" / "Rules" / "cairn.md").read_text()
    )
    assert main(["install", "--no-start", "--no-hooks", "--dry-run", *editors]) == 0
    assert "no rules file written" in capsys.readouterr().out
    assert main(["uninstall"]) == 0
    assert list(elsewhere.iterdir()) == []
    assert not windsurf.exists()


def test_windsurf_rules_go_in_a_block_of_the_users_global_rules(
    user_home: Path, project_cwd: Path
) -> None:
    rules = user_home / ".codeium" / "windsurf" / "memories" / "global_rules.md"
    rules.parent.mkdir(parents=True)
    mine = "# My rules\n\n- always use bun\n"
    rules.write_text(mine)
    assert main(["install", "--no-start", "--no-hooks", "--editor", "windsurf"]) == 0
    text = rules.read_text()
    assert text.startswith(mine) and textblock.BEGIN in text and "save_memory" in text
    mcp = user_home / ".codeium" / "windsurf" / "mcp_config.json"
    assert _entry(mcp)["command"]
    # Re-install replaces the block instead of adding a second one.
    assert main(["install", "--no-start", "--no-hooks", "--editor", "windsurf"]) == 0
    assert rules.read_text().count(textblock.BEGIN) == 1
    assert main(["uninstall"]) == 0
    assert rules.read_text() == mine
    assert not mcp.exists()


def test_windsurf_project_rule_is_a_workspace_file(user_home: Path, project_cwd: Path) -> None:
    assert main(["install", "--no-start", "--no-hooks", "--project", "--editor", "windsurf"]) == 0
    rule = project_cwd / ".windsurf" / "rules" / "cairn.md"
    assert rule.read_text().startswith("---\ntrigger: always_on\n---\n")
    assert main(["uninstall", "--project"]) == 0
    assert not rule.exists()


def test_cline_writes_where_the_extension_lives(user_home: Path, project_cwd: Path) -> None:
    storage = (
        user_home / ".config" / "VSCodium" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
    )
    storage.mkdir(parents=True)
    assert cline_mcp_paths(user_home, "linux") == [storage / "settings" / "cline_mcp_settings.json"]
    (user_home / "Documents").mkdir()
    assert main(["install", "--no-start", "--no-hooks", "--editor", "cline"]) == 0
    entry = _entry(storage / "settings" / "cline_mcp_settings.json")
    assert entry["disabled"] is False and entry["alwaysAllow"] == []
    rule = user_home / "Documents" / "Cline" / "Rules" / "cairn.md"
    assert "resume_session" in rule.read_text()
    # Fields Cline adds to our entry (approved tools) survive a re-install.
    path = storage / "settings" / "cline_mcp_settings.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["cairn"]["alwaysAllow"] = ["search"]
    path.write_text(json.dumps(data, indent=2))
    assert main(["install", "--no-start", "--no-hooks", "--editor", "cline"]) == 0
    assert _entry(path)["alwaysAllow"] == ["search"]
    assert main(["uninstall"]) == 0
    assert not rule.exists() and not path.exists()
    assert storage.is_dir()  # the extension's own folder is not ours to remove


def test_cline_defaults_to_vscode_when_nothing_is_installed(user_home: Path) -> None:
    assert cline_mcp_paths(user_home, "linux") == [
        user_home
        / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"
    ]
    mac = cline_mcp_paths(user_home, "darwin")[0]
    assert "Library/Application Support/Code/User" in str(mac)


def test_a_user_file_with_our_rule_name_is_kept(user_home: Path, project_cwd: Path) -> None:
    rule = project_cwd / ".clinerules" / "cairn.md"
    rule.parent.mkdir()
    rule.write_text("my own notes about cairns\n")
    assert main(["install", "--no-start", "--no-hooks", "--project", "--editor", "cline"]) == 0
    assert rule.read_text().startswith("my own notes about cairns\n")
    assert main(["uninstall", "--project"]) == 0
    assert rule.read_text() == "my own notes about cairns\n"


def test_single_file_clinerules_gets_a_block(user_home: Path, project_cwd: Path) -> None:
    (project_cwd / ".clinerules").write_text("use tabs\n")
    _, rules = editor_targets("cline", user_home, project_cwd)
    assert rules is not None and rules.mode == "block" and rules.path == project_cwd / ".clinerules"


@pytest.mark.parametrize("text", ["", "a\n", "a\n\n", "no newline", "x\n<!-- other -->\n", "\n\n"])
def test_text_block_round_trip(text: str) -> None:
    added = textblock.set_block(text, "body")
    assert textblock.has_block(added)
    assert textblock.set_block(added, "body") == added
    expected = text if text.endswith("\n") or not text else text + "\n"
    assert textblock.remove_block(added) == expected
