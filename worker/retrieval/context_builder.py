"""What a hook injects: compact Markdown within a token budget, and nothing when nothing matters.

Session start: where we left off (first after resume/compact/clear), project profile, pinned and
important memories, the last summary, then recent observations as one-line index entries
(`#id time TYPE title`) that the MCP tool `get_observations` expands. Prompt: the few items most
relevant to the prompt that this session was not given yet; refusal -> empty text.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from worker.clock import now_ms, to_iso
from worker.fence import neutralise
from worker.memory.profile import load_profile_to_cache, render_profile
from worker.retrieval import ranking
from worker.retrieval.context_lines import Said, failure_excerpt, fresh_lines, labelled_items
from worker.retrieval.db_keywords import KeywordScorer
from worker.retrieval.search import SearchRequest, search
from worker.retrieval.service import EmbeddingService
from worker.retrieval.tokens import estimate_tokens, truncate_to_tokens
from worker.settings import Settings
from worker.store import context_rows as q
from worker.store import profiles, projects
from worker.store.backend import Backend
from worker.store.items import KINDS

log = logging.getLogger(__name__)

RESUME_SOURCES = ("resume", "compact", "clear")
# Per-item caps keep one long item from eating a whole budget.
MEMORY_LINE_TOKENS = 90
SUMMARY_TOKENS = 220
CHECKPOINT_TOKENS = 260
INDEX_LINE_TOKENS = 45
PROMPT_ITEM_TOKENS = 120
# A memory is written to be read whole: its reason comes last ("..., because ...").
PROMPT_MEMORY_TOKENS = 200


@dataclass
class ContextRequest:
    project: str
    query: str | None = None
    session_id: str | None = None
    budget: int | None = None
    source: str | None = None
    preview: bool = False
    # Whose private prompts and observations may be given (SearchRequest.reader).
    reader: str | None = None


@dataclass
class Part:
    section: str
    kind: str
    id: int
    text: str
    score: float | None = None
    signals: dict[str, float] | None = None
    # A prompt item's own evidence: cosine to the prompt, share of its words (preview shows it).
    evidence: dict[str, float | int | None] | None = None

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


@dataclass
class Composer:
    """Adds lines while they fit; a section header goes in only with its first line."""

    budget: int
    lines: list[str] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    used: int = 0

    def add(self, header: str | None, part: Part) -> bool:
        cost = estimate_tokens(part.text)
        header_cost = estimate_tokens(header) if header and header not in self.lines else 0
        if self.used + cost + header_cost > self.budget:
            return False
        if header_cost:
            self.lines.append(header)  # type: ignore[arg-type]
            self.used += header_cost
        self.lines.append(part.text)
        self.used += cost
        self.parts.append(part)
        return True

    @property
    def text(self) -> str:
        return "\n".join(self.lines) if self.parts else ""


def _one_line(text: str) -> str:
    return " ".join((text or "").split())


def _time(ms: int, now: int) -> str:
    iso = to_iso(ms) or ""
    # Today's items show the time only; older ones the date.
    return (
        iso[11:16] if now - ms < 86_400_000 and iso[:10] == (to_iso(now) or "")[:10] else iso[:10]
    )


def index_line(item: dict[str, Any], now: int) -> str:
    line = f"#{item['id']} {_time(int(item['created_at']), now)} {str(item['type']).upper()} "
    return truncate_to_tokens(line + _one_line(item["title"]), INDEX_LINE_TOKENS)


def memory_line(item: dict[str, Any]) -> str:
    pin = "📌 " if item.get("pinned") else ""
    scope = "" if item.get("project_id") is not None else " (global)"
    text = f"- {pin}[{item['type']}]{scope} {_one_line(item['body'])}"
    return truncate_to_tokens(text, MEMORY_LINE_TOKENS)


def summary_text(item: dict[str, Any], said: Said | None = None) -> str:
    said = said or Said()
    asked = _one_line(item["title"])
    lines = [f"Last session asked: {asked}"] if said.new(asked) else []
    lines += fresh_lines(labelled_items(item["body"] or ""), said)
    return truncate_to_tokens("\n".join(lines), SUMMARY_TOKENS)


def checkpoint_text(cp: dict[str, Any], said: Said | None = None) -> str:
    said = said or Said()
    sections = [
        (label, [line for line in str(cp.get(key) or "").splitlines() if line.strip()])
        for label, key in (
            ("Task", "task"),
            ("Progress", "progress"),
            ("Next", "next_steps"),
            ("Open questions", "open_questions"),
        )
    ]
    if cp.get("files"):
        sections.append(("Files in flight", [", ".join(cp["files"][:10])]))
    return truncate_to_tokens("\n".join(fresh_lines(sections, said)), CHECKPOINT_TOKENS)


def prompt_item_text(item: dict[str, Any], now: int) -> str:
    kind = item["kind"]
    when = _time(int(item["created_at"]), now)
    if kind == "observation":
        head = f"- #{item['id']} {when} {str(item['type']).upper()} {_one_line(item['title'])}"
        body = _one_line(item.get("body") or "")
        if item["type"] == "command" and "(exit " in str(item["title"]):
            # What failed, not the test runner's banner at the head of the output.
            body = failure_excerpt(str(item.get("body") or "")) or body
        elif item["type"] == "answer" and body:
            # The agent's own words read on: its first sentence (the title) then the rest; a
            # title cut short is said whole by the body.
            title = _one_line(item["title"])
            text = body if title.endswith("…") else f"{title} {body}"
            head = f"- #{item['id']} {when} ANSWER {text}"
            body = ""
    elif kind == "memory":
        head = f"- [{item['type']}] {_one_line(item['body'])}"
        body = ""
    elif kind == "summary":
        head = f"- {when} session summary: {_one_line(item['title'])}"
        body = _one_line(item.get("body") or "")
    else:
        head = f"- {when} earlier prompt: {_one_line(item['body'])}"
        body = ""
    text = f"{head}: {body}" if body else head
    return truncate_to_tokens(
        text, PROMPT_MEMORY_TOKENS if kind == "memory" else PROMPT_ITEM_TOKENS
    )


@dataclass
class _StartRows:
    project_id: int | None
    name: str
    memories: list[dict[str, Any]]
    summary: dict[str, Any] | None
    checkpoint: dict[str, Any] | None
    recent: list[dict[str, Any]]
    top_files: list[tuple[str, int]]
    injected: set[tuple[str, int]]
    profile: str = ""
    # A static profile part recomputed by this read, to be cached by a write after it.
    profile_entry: dict[str, Any] | None = None


def _start_rows(conn: sqlite3.Connection, req: ContextRequest, s: Settings) -> _StartRows:
    now = now_ms()
    pid = projects.find(conn, req.project)
    memories = q.core_memories(conn, pid, s.context.memory_min_importance, now, 50)
    if pid is None:
        return _StartRows(None, req.project, memories, None, None, [], [], set())
    name_row = conn.execute("SELECT name FROM projects WHERE id = ?", (pid,)).fetchone()
    profile, profile_entry = _profile_text(conn, pid, s, req.reader)
    return _StartRows(
        project_id=pid,
        name=str(name_row[0]) if name_row else req.project,
        memories=memories,
        summary=q.latest_summary(conn, pid),
        checkpoint=q.latest_checkpoint(conn, pid, req.session_id),
        recent=q.recent_observations(conn, pid, s.context.recent_observations, req.reader),
        top_files=q.top_files(conn, pid, 5, req.reader),
        injected=q.injected(conn, req.session_id) if req.session_id else set(),
        profile=profile,
        profile_entry=profile_entry,
    )


def _profile_text(
    conn: sqlite3.Connection, project_id: int, s: Settings, reader: str | None
) -> tuple[str, dict[str, Any] | None]:
    """The project profile's compact Markdown (languages, commands that work, folders...) and
    the cache entry of its static part if it had to be recomputed."""
    try:
        profile, entry = load_profile_to_cache(conn, project_id, s, reader=reader)
    except sqlite3.Error:
        log.exception("project profile unavailable for the session-start context")
        return "", None
    return (render_profile(profile) if profile else ""), entry


def _session_start(rows: _StartRows, req: ContextRequest, budget: int) -> Composer:
    now = now_ms()
    out = Composer(budget)
    title = f"# Cairn memory for {rows.name}"
    if not rows.memories and rows.project_id is None:
        return out
    resume_first = (req.source or "") in RESUME_SOURCES and rows.checkpoint is not None
    said = Said()  # each statement once: a later section drops what an earlier one said

    def checkpoint() -> None:
        if rows.checkpoint is not None:
            text = checkpoint_text(rows.checkpoint, said)
            if text:
                out.add(
                    "## Where we left off (checkpoint)",
                    Part("checkpoint", "checkpoint", rows.checkpoint["id"], text),
                )

    out.lines.append(title)
    out.used += estimate_tokens(title)
    if resume_first:
        checkpoint()
    profile_lines = [line for line in rows.profile.splitlines() if line.strip()]
    for line in profile_lines:
        if not said.new(line):
            continue
        part = Part("profile", "profile", rows.project_id or 0, truncate_to_tokens(line, 120))
        out.add("## Project", part)
    if not profile_lines and rows.top_files:
        files = ", ".join(f for f, _ in rows.top_files)
        part = Part("profile", "profile", rows.project_id or 0, f"Most edited: {files}")
        out.add("## Project", part)
    for memory in rows.memories:
        if rows.profile and _one_line(memory["body"]) in rows.profile:
            continue  # the profile already lists it (decisions, preferences)
        out.add("## Memories", Part("memories", "memory", memory["id"], memory_line(memory)))
    if not resume_first:
        checkpoint()
    summary = summary_text(rows.summary, said) if rows.summary is not None else ""
    if rows.summary is not None and summary:
        out.add("## Last session", Part("summary", "summary", rows.summary["id"], summary))
    header = "## Recent activity (#id time TYPE title; details: get_observations)"
    for item in rows.recent:
        if not out.add(header, Part("recent", "observation", item["id"], index_line(item, now))):
            break
    if not out.parts:
        out.lines.clear()
        out.used = 0
    return out


async def build_context(
    store: Backend,
    settings: Settings,
    service: EmbeddingService | None,
    req: ContextRequest,
    *,
    keywords: KeywordScorer,
) -> dict[str, Any]:
    now = now_ms()
    judged: list[dict[str, Any]] | None = None
    if req.query is None or not req.query.strip():
        budget = req.budget if req.budget is not None else settings.context.session_tokens
        rows = await store.read(lambda c: _start_rows(c, req, settings))
        cache, project_id = rows.profile_entry, rows.project_id
        if cache is not None and project_id is not None:
            await store.write(lambda c: profiles.store_static(c, project_id, cache))
        composed = _session_start(rows, req, budget)
        refused = False
    else:
        budget = req.budget if req.budget is not None else settings.context.prompt_tokens
        injected = (
            await store.read(lambda c: q.injected(c, req.session_id or ""))
            if req.session_id
            else set()
        )
        outcome = await search(
            store,
            settings,
            service,
            SearchRequest(
                query=req.query,
                project=req.project,
                limit=settings.context.prompt_max_items,
                exclude=injected,
                exclude_session_prompts=req.session_id,
                judge_items=True,
                reader=req.reader,
            ),
            keywords=keywords,
        )
        composed = Composer(budget)
        refused = outcome.refused
        header = "## Cairn: relevant memory"
        for cand in outcome.hits:
            item = outcome.items[cand.ref]
            part = Part(
                "relevant",
                item["kind"],
                item["id"],
                prompt_item_text(item, now),
                score=cand.score,
                signals=cand.signals,
                evidence={
                    "cosine": None if cand.plain_cosine is None else round(cand.plain_cosine, 4),
                    "coverage": None if cand.coverage is None else round(cand.coverage, 4),
                    "keyword_rank": cand.keyword_rank,
                    "vector_rank": cand.vector_rank,
                },
            )
            composed.add(header, part)
        if not composed.parts:
            refused = True
        if req.preview:
            judged = [
                {
                    "kind": cand.ref[0],
                    "id": cand.ref[1],
                    "text": neutralise(prompt_item_text(outcome.items[cand.ref], now)),
                    "session_id": outcome.items[cand.ref].get("session_id"),
                    "relevance": cand.relevance,
                    "features": cand.features,
                    "kept": cand in outcome.hits,
                }
                for cand in outcome.judged
            ]
    if req.session_id and not req.preview and composed.parts and req.query is not None:
        # Only what prompts were given is skipped later: the session-start block is a broad
        # list, and a prompt that needs one of its memories gets it again, as the one that
        # applies now. Index lines are pointers, not content: a later prompt may still bring
        # the details.
        refs = [(p.kind, p.id) for p in composed.parts if p.kind in KINDS and p.section != "recent"]
        if refs:
            session_id = req.session_id
            await store.write(lambda c: q.record_injections(c, session_id, refs, now))
    # Stored text must not open or close the block the hook wraps this in (the whole text,
    # since a marker can also form across two lines).
    text = neutralise(composed.text)
    items: list[dict[str, Any]] = []
    for part in composed.parts:
        entry: dict[str, Any] = {"section": part.section, "kind": part.kind, "id": part.id}
        if req.preview:
            entry.update(
                text=neutralise(part.text),
                tokens=part.tokens,
                score=part.score,
                signals=ranking.rounded(part.signals) if part.signals is not None else None,
                evidence=part.evidence,
            )
        items.append(entry)
    answer: dict[str, Any] = {
        "text": text,
        "items": items,
        "tokens": estimate_tokens(text) if text else 0,
        "budget": budget,
        "refused": refused,
    }
    if judged is not None:
        answer["candidates"] = judged
    return answer
