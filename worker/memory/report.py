"""The activity report: sessions, files changed most, what was learned, decisions made (Markdown).

Pure over the rows `worker.store.reports.report_rows` returns; deterministic for the same rows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from worker.clock import parse_iso, to_iso
from worker.memory.activity import clip, relative_path, unique
from worker.store.rows import ms

_RELATIVE_RE = re.compile(r"^\s*(\d{1,6})\s*(m|min|h|d|w)\s*$", re.IGNORECASE)
_UNIT_MS = {"m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
TOP_FILES = 10
MAX_LEARNED = 15
MAX_DECISIONS = 15
MAX_SESSION_ROWS = 50


def parse_when(text: str, now: int) -> int:
    """'7d', '24h', '2w', '30m' ago, or an ISO 8601 date / date-time; raises ValueError."""
    match = _RELATIVE_RE.match(text)
    if match:
        return now - int(match.group(1)) * _UNIT_MS[match.group(2).lower()]
    return parse_iso(text)


def _day(ms: int) -> str:
    return (to_iso(ms) or "")[:10]


def _minute(ms: int) -> str:
    return (to_iso(ms) or "").replace("T", " ")[:16]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def build_report(
    rows: Mapping[str, Any], *, since: int, until: int, project: str | None
) -> dict[str, Any]:
    """Figures and Markdown for [since, until); `project` is the display name or None (all)."""
    sessions = list(rows["sessions"])
    per_project = project is None
    files: Counter[str] = Counter()
    for change in rows["file_changes"]:
        rel = relative_path(change["file"], change["project_key"])
        files[f"{change['project_name']}: {rel}" if per_project else rel] += change["changes"]
    top_files = sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FILES]
    learned = unique(
        [item for entry in rows["learned"] for item in entry["items"]]
        + [m["content"] for m in rows["memories"] if m["kind"] in ("fact", "lesson")]
    )[:MAX_LEARNED]
    decisions = [m for m in rows["memories"] if m["kind"] == "decision"][:MAX_DECISIONS]
    types = dict(rows["observation_types"])
    observation_total = sum(types.values())

    title = f"Cairn activity report — {project}" if project else "Cairn activity report"
    lines = [
        f"# {title}",
        "",
        f"_{_minute(since)} → {_minute(until)} UTC · {len(sessions)} session"
        f"{'s' if len(sessions) != 1 else ''} · {rows['prompt_count']} prompts · "
        f"{observation_total} observations_",
        "",
    ]
    if types:
        lines += [
            "Observations by type: "
            + ", ".join(
                f"{k} {v}" for k, v in sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))
            ),
            "",
        ]
    lines += ["## Sessions", ""]
    if sessions:
        head = (
            "| Started | "
            + ("Project | " if per_project else "")
            + "Session | Prompts | Observations | Request |"
        )
        lines += [head, "|" + " --- |" * (6 if per_project else 5)]
        for s in sessions[-MAX_SESSION_ROWS:]:
            request = clip(str(s["request"] or "").split("\n")[0], 100) or "—"
            cells = [_minute(ms(s["started_at"], "sessions.started_at") or 0)]
            if per_project:
                cells.append(_cell(str(s["project_name"])))
            cells += [
                f"`{_cell(str(s['id']))[:12]}`",
                str(s["prompts"]),
                str(s["observations"]),
                _cell(request),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        if len(sessions) > MAX_SESSION_ROWS:
            lines.append(f"\n_…and {len(sessions) - MAX_SESSION_ROWS} earlier sessions._")
    else:
        lines.append("No sessions in this period.")
    lines += ["", "## Files changed most", ""]
    if top_files:
        lines += ["| File | Changes |", "| --- | --- |"]
        lines += [f"| `{_cell(path)}` | {n} |" for path, n in top_files]
    else:
        lines.append("No files changed.")
    lines += ["", "## What was learned", ""]
    lines += [f"- {clip(item, 300)}" for item in learned] or ["Nothing recorded."]
    lines += ["", "## Decisions made", ""]
    if decisions:
        for d in decisions:
            note = " _(since superseded)_" if d["superseded_by"] is not None else ""
            lines.append(f"- {_day(int(d['created_at']))} — {clip(str(d['content']), 300)}{note}")
    else:
        lines.append("No decisions recorded.")
    latest = next((s for s in reversed(sessions) if s["next_steps"]), None)
    if latest is not None:
        lines += ["", "## Next steps (latest session)", ""]
        lines += [f"- {step}" for step in latest["next_steps"]]
    return {
        "project": project,
        "since": to_iso(since),
        "until": to_iso(until),
        "sessions": len(sessions),
        "prompts": rows["prompt_count"],
        "observations": observation_total,
        "observation_types": types,
        "files_changed": [{"file": path, "changes": n} for path, n in top_files],
        "learned": learned,
        "decisions": [
            {
                "id": d["id"],
                "content": d["content"],
                "created_at": to_iso(int(d["created_at"])),
                "superseded": d["superseded_by"] is not None,
            }
            for d in decisions
        ],
        "markdown": "\n".join(lines) + "\n",
    }
