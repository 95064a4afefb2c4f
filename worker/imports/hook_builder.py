"""Cairn requests for rebuilt hook events, made by the hooks' own code (hooks/cairn_hook_*.py).

An import must store what the live hooks would have stored: the same observation builder,
privacy filters (secrets, <private> spans), project resolution and task-plan reducer. So this
loads the shipped hook modules and calls `plan_requests` with a hook object of the event; only
the times (the transcript's, not now) and the Stop's event id (the hooks name it after the
transcript's size at the time) are set here.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from worker.clock import to_iso
from worker.imports.claude_code import HookEvent
from worker.paths import data_dir

# Which body field carries the event's time, per request path ending.
TIME_FIELDS = {
    "/api/sessions": "started_at",
    "/api/prompts": "created_at",
    "/api/observations": "created_at",
    "/plan": "updated_at",
    "/summarize": "at",
    "/end": "ended_at",
}


def load_hook_modules() -> dict[str, ModuleType]:
    """The hooks' modules (stdlib only), imported from the shipped hooks folder."""
    folder = str(data_dir("hooks"))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    names = (
        "cairn_hook_run",
        "cairn_hook_events",
        "cairn_hook_identity",
        "cairn_hook_io",
        "cairn_hook_tasks",
        "cairn_hook_agents",
        "cairn_hook_gemini",
    )
    return {name: importlib.import_module(name) for name in names}


@dataclass
class Request:
    method: str
    path: str
    body: dict[str, Any]


class HookBuilder:
    """Builds requests for hook events, as the hook process would for each one."""

    def __init__(self, config: dict[str, Any] | None = None, agent: str = "claude-code") -> None:
        self.agent = agent  # whose events: the rows record it, as the live hooks do
        mods = load_hook_modules()
        self.run = mods["cairn_hook_run"]
        self.ev = mods["cairn_hook_events"]
        self.identity = mods["cairn_hook_identity"]
        self.io = mods["cairn_hook_io"]
        self.task_tools: tuple[str, ...] = tuple(mods["cairn_hook_tasks"].TASK_TOOLS)
        # The task reducer keeps each session's tasks in files under a home of its own: a
        # throwaway one, so the import never touches the live hooks' state.
        self._plans = tempfile.TemporaryDirectory(prefix="cairn-import-")
        self.home = self._plans.name
        self.config = config if config is not None else {}
        self.chars = self.run.field_chars(self.config)
        # On a team database a project is keyed by its git remote, as the live hooks key it.
        self.team = bool(self.run.team_database(self.config))
        self._projects: dict[str, str] = {}
        self._keys: dict[str, str] = {}

    def close(self) -> None:
        self._plans.cleanup()

    def project(self, cwd: str) -> str:
        """The project a cwd belongs to, as the hooks resolve it (the git top, worktrees to
        their main repository); cached, as the walk touches the disk."""
        found = self._projects.get(cwd)
        if found is None:
            found = self._projects[cwd] = str(self.ev.project_root(cwd))
        return found

    def excluded(self, cwd: str, project: str) -> bool:
        return bool(self.run.excluded([cwd, project], self.config))

    def session_id(self, raw: str) -> str:
        return str(self.io.route_safe_id(raw.strip()[:200]))

    def build(self, event: HookEvent) -> list[Request]:
        """The requests the hook would send for `event` (none for what it would skip)."""
        payload = dict(event.payload)
        sid = payload.get("session_id")
        if not isinstance(sid, str) or not sid.strip():
            return []
        payload["session_id"] = self.session_id(sid)
        cwd = str(payload.get("cwd") or "")
        project = self.project(cwd) if cwd else ""
        if not project:
            return []
        hook = self.run.Hook(event.name, self.home)
        hook.agent = self.agent
        key = self._keys.get(project)
        if key is None:  # cached: on a team database it reads the repository's git config
            key = self._keys[project] = str(self.identity.project_key(project, self.team))
        self.run.plan_requests(hook, payload, key, cwd, self.chars, project)
        at = to_iso(event.at_ms)
        out = []
        for pending in hook.pending:
            body = dict(pending.body or {})
            for ending, name in TIME_FIELDS.items():
                if pending.path.endswith(ending):
                    body[name] = at
                    break
            if event.name == "Stop" and pending.path.endswith("/summarize"):
                # One summary per turn end: named by the transcript line that ended the turn
                # (its answer observation keeps the hook's id: its prompt's, as live).
                body["event_id"] = f"cc:{payload['session_id'][:80]}:stop:{event.key[:80]}"
            out.append(Request(pending.method, pending.path, body))
        return out
