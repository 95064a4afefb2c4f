"""Search answers: what GET /api/search and the search page show for a query (an explicit search
counts as a retrieval of the items it returns)."""

from __future__ import annotations

from typing import Any

from worker.clock import to_iso
from worker.container import Cairn
from worker.errors import BadRequest
from worker.ops.fields import project_field
from worker.retrieval import ranking
from worker.retrieval.ranking import Candidate
from worker.retrieval.search import MODES, SearchOutcome, SearchRequest, search
from worker.schema import Schema
from worker.settings import Settings
from worker.store.items import KINDS
from worker.store.memories import KINDS as MEMORY_KINDS
from worker.store.observations import TYPES

SNIPPET_CHARS = 240


def csv_values(raw: str | None, allowed: tuple[str, ...], name: str) -> list[str] | None:
    """A comma-separated filter, every value checked against `allowed`."""
    if raw is None or not raw.strip():
        return None
    values = [v.strip() for v in raw.split(",") if v.strip()]
    bad = [v for v in values if v not in allowed]
    if bad:
        raise BadRequest(
            f"'{name}' has unknown value {bad[0]!r}; allowed: {', '.join(allowed)}", field=name
        )
    return values


def snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> str:
    """A window of `text` around the first query word it contains (plain text, never HTML)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    positions = [p for p in (lowered.find(t) for t in terms if len(t) > 2) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    start = flat.rfind(" ", 0, start) + 1 if start > 0 else 0
    piece = flat[start : start + width]
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(flat) else "")


def hit_dict(cand: Candidate, item: dict[str, Any], query: str, explain: bool) -> dict[str, Any]:
    words = [w.lower() for w in query.split()]
    out: dict[str, Any] = {
        "kind": item["kind"],
        "id": item["id"],
        "type": item.get("type"),
        "title": item["title"],
        "snippet": snippet(item.get("body") or item["title"], words),
        "score": round(cand.score, 6),
        "created_at": to_iso(int(item["created_at"])),
        "project": item.get("project"),
        "session_id": item.get("session_id"),
        "importance": item.get("importance"),
        "files": item.get("files") or [],
        "meta": item.get("meta"),
    }
    if explain:
        out["signals"] = ranking.rounded(cand.signals)
        out["match"] = {
            "keyword_rank": cand.keyword_rank,
            "keyword_score": round(cand.keyword_score, 6)
            if cand.keyword_score is not None
            else None,
            "vector_rank": cand.vector_rank,
            "cosine": round(cand.cosine, 6) if cand.cosine is not None else None,
            "fused": round(cand.fused, 6),
        }
    return out


def outcome_dict(outcome: SearchOutcome, query: str, explain: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "hits": [hit_dict(c, outcome.items[c.ref], query, explain) for c in outcome.hits],
        "refused": outcome.refused,
        "mode": outcome.mode,
        "embeddings": outcome.embeddings,
    }
    if explain:
        out["explain"] = {
            "coverage": round(outcome.coverage, 6),
            "best_cosine": round(outcome.best_cosine, 6)
            if outcome.best_cosine is not None
            else None,
        }
    return out


def search_query(s: Settings) -> dict[str, Schema]:
    return {
        "q": {"type": "string", "minLength": 1, "maxLength": s.search.max_query_chars},
        "project": project_field(s),
        "kind": {
            "type": "string",
            "maxLength": 200,
            "description": f"Comma-separated kinds: {', '.join(KINDS)}",
        },
        "type": {
            "type": "string",
            "maxLength": 400,
            "description": "Comma-separated observation types or memory kinds",
        },
        "mode": {"type": "string", "enum": list(MODES)},
        "limit": {"type": "integer", "minimum": 1, "maximum": s.search.max_limit},
        "explain": {"type": "boolean"},
        "include_archived": {"type": "boolean"},
    }


async def search_answer(cairn: Cairn, qp: dict[str, Any]) -> dict[str, Any]:
    """The answer of GET /api/search for validated query parameters (`search_query`)."""
    s = cairn.settings
    query: str = qp["q"]
    req = SearchRequest(
        query=query,
        project=qp.get("project"),
        kinds=csv_values(qp.get("kind"), KINDS, "kind"),
        types=csv_values(qp.get("type"), (*TYPES, *MEMORY_KINDS, "prompt", "summary"), "type"),
        mode=qp.get("mode", "hybrid"),
        limit=qp.get("limit", s.search.default_limit),
        include_archived=qp.get("include_archived", False),
        count_retrieval=True,
        reader=cairn.reader,
    )
    outcome = await search(cairn.store, s, cairn.embeddings, req, keywords=cairn.keywords)
    return outcome_dict(outcome, query, bool(qp.get("explain", False)))
