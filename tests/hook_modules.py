"""Import the stdlib-only hook modules (they live in hooks/, outside the worker package)."""

from __future__ import annotations

import sys
from pathlib import Path

HOOKS_DIR = Path(__file__).resolve().parent.parent / "hooks"
HOOK_SCRIPT = HOOKS_DIR / "cairn_hook.py"
if str(HOOKS_DIR) not in sys.path:
    sys.path.insert(0, str(HOOKS_DIR))

import cairn_hook_agents as agents  # noqa: E402
import cairn_hook_events as events  # noqa: E402
import cairn_hook_excerpt as excerpt  # noqa: E402
import cairn_hook_fence as fence  # noqa: E402
import cairn_hook_gemini as gemini  # noqa: E402
import cairn_hook_identity as identity  # noqa: E402
import cairn_hook_io as hook_io  # noqa: E402
import cairn_hook_privacy as privacy  # noqa: E402
import cairn_hook_run as run  # noqa: E402
import cairn_hook_tasks as tasks  # noqa: E402
import cairn_hook_transcript as transcript  # noqa: E402

__all__ = [
    "HOOKS_DIR",
    "HOOK_SCRIPT",
    "agents",
    "events",
    "excerpt",
    "fence",
    "gemini",
    "hook_io",
    "identity",
    "privacy",
    "run",
    "tasks",
    "transcript",
]
