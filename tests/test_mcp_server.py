"""Unit tests of `cairn mcp`'s pieces: project identity (same key as the hooks), error texts,
formatting. The protocol itself is tested over stdio in tests/e2e/test_mcp_server.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from worker.client import ApiError
from worker.mcp_server import (
    WorkerGateway,
    _api_error_text,
    default_project,
    format_hits,
    index_line,
)
from worker.paths import data_dir
from worker.project_identity import project_root
from worker.settings import Settings


def hook_events() -> ModuleType:
    folder = str(data_dir("hooks"))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.find_spec("cairn_hook_events")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "feature").mkdir(parents=True)
    (main / "src" / "deep").mkdir(parents=True)
    worktree = tmp_path / "feature-wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'feature'}\n")
    (main / ".git" / "worktrees" / "feature" / "commondir").write_text("../..\n")
    sub = main / "vendor" / "lib"
    sub.mkdir(parents=True)
    (main / ".git" / "modules" / "lib").mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    plain = tmp_path / "notes"
    plain.mkdir()
    link = tmp_path / "link-to-main"
    link.symlink_to(main)
    return {
        "repo": main / "src" / "deep",
        "worktree": worktree,
        "submodule": sub,
        "plain": plain,
        "symlink": link / "src",
    }


def test_project_identity_matches_the_hooks(layout: dict[str, Path]) -> None:
    hooks = hook_events()
    expected = {
        "repo": str(layout["repo"].parent.parent),
        "worktree": str(layout["repo"].parent.parent),
        "submodule": str(layout["submodule"]),
        "plain": str(layout["plain"]),
        "symlink": str(layout["symlink"].parent),  # not resolved: the path the agent uses
    }
    for name, folder in layout.items():
        ours = project_root(str(folder))
        assert ours == hooks.project_root(str(folder)), name
        assert ours == expected[name], name


def test_default_project_prefers_explicit_settings(tmp_path: Path) -> None:
    assert default_project({"CAIRN_PROJECT": "my-key"}) == "my-key"
    (tmp_path / ".git").mkdir()
    (tmp_path / "a").mkdir()
    assert default_project({"CLAUDE_PROJECT_DIR": str(tmp_path / "a")}) == str(tmp_path)


def test_error_texts_say_what_to_do() -> None:
    missing_route = ApiError(
        404, {"error": {"code": "not_found", "message": "no route for /api/x"}}
    )
    assert "has no GET /api/x endpoint" in _api_error_text("GET", "/api/x?q=1", missing_route)
    bad = ApiError(400, {"error": {"code": "bad_request", "message": "too long", "field": "q"}})
    assert _api_error_text("GET", "/api/search?q=z", bad) == (
        "Cairn GET /api/search failed with HTTP 400 (field 'q'): too long"
    )
    denied = ApiError(401, {"error": {"message": "bad token"}})
    assert "token" in _api_error_text("GET", "/api/search", denied)


def test_hits_are_index_lines() -> None:
    hit = {
        "kind": "observation",
        "id": 7,
        "type": "command",
        "title": "pytest   failed\non parser",
        "created_at": "2026-01-02T03:04:05.000Z",
        "snippet": "AssertionError",
    }
    assert index_line(hit) == "#7 2026-01-02 03:04 COMMAND pytest failed on parser"
    text = format_hits({"hits": [hit, {**hit, "kind": "memory", "id": 3, "type": "decision"}]})
    assert "memory:3 2026-01-02 03:04 DECISION" in text and "    AssertionError" in text
    assert format_hits({"hits": [], "refused": True}).startswith("No relevant memory found")


def test_a_worker_that_is_down_is_a_clear_tool_error(settings: Settings) -> None:
    gateway = WorkerGateway(settings, autostart=False)
    with pytest.raises(ToolError) as caught:
        gateway.call("GET", "/api/search", query={"q": "x"})
    message = str(caught.value)
    assert "not running" in message and "cairn start" in message
