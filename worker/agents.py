"""The coding agents Cairn's hooks serve: their ids (a session's `agent`, `meta.source`) and names.

One list for the store's filter, the installer and the dashboard; the hooks (stdlib, outside the
package) keep their own copy in hooks/cairn_hook_agents.py.
"""

from __future__ import annotations

AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor")
NAMES = {
    "claude-code": "Claude Code",
    "codex": "Codex CLI",
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "cursor": "Cursor",
}
