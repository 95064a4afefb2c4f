"""The Settings page's configuration table, grouped by what each setting tunes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# (group title, key prefixes), first match wins; whatever matches none goes under "Worker".
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Search and ranking", ("search_", "fusion_", "rank_", "refusal_", "dedupe_", "thread_")),
    ("Embeddings", ("embed_", "models_dir")),
    ("Context injection", ("context_", "prompt_context_", "profile_")),
    (
        "Memory lifecycle",
        ("decay_", "half_life_", "obs_", "memory_", "supersede_", "compress_", "max_tags"),
    ),
    (
        "Sessions, summaries and reports",
        ("session_idle", "summary_", "checkpoint_", "plan_", "report_", "backup_"),
    ),
    (
        "Dashboard and security",
        ("login_", "session_cookie", "max_dashboard", "rate_limit_", "sse_"),
    ),
    (
        "Request limits",
        ("max_", "page_size", "header_timeout", "connection_", "busy_timeout", "group_commit"),
    ),
)
OTHER = "Worker"


def group_of(key: str) -> str:
    for title, prefixes in GROUPS:
        if key.startswith(prefixes):
            return title
    return OTHER


def config_groups(items: Iterable[tuple[str, Any]]) -> list[tuple[str, list[tuple[str, Any]]]]:
    """(title, [(key, value), ...]) in GROUPS order, the worker's own settings first."""
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for key, value in items:
        grouped.setdefault(group_of(key), []).append((key, value))
    order = [OTHER, *(title for title, _ in GROUPS)]
    return [(title, grouped[title]) for title in order if title in grouped]
