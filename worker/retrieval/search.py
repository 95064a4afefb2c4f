"""Hybrid search: keyword (BM25 over analysed terms) + vectors, fused, reranked, de-duplicated.

One entry point, `search()`, serves GET /api/search (which counts retrievals), the MCP recall and
the prompt-context builder (which never counts).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio.to_thread
import numpy as np
import numpy.typing as npt

from worker.clock import now_ms
from worker.logistic import sigmoid
from worker.memory import usefulness
from worker.retrieval import clauses, judgment, keyword_judgment, ranking, relevance
from worker.retrieval.db_keywords import KeywordScorer
from worker.retrieval.ranking import Candidate, Ref, Weights
from worker.retrieval.service import EmbeddingService, memory_text
from worker.retrieval.when import date_ranges
from worker.settings import Settings
from worker.store import items as item_rows
from worker.store import projects
from worker.store import search as q
from worker.store import use as use_store
from worker.store.backend import Backend
from worker.store.db import AnyDb
from worker.store.errors import StoreError
from worker.store.m002_retrieval import KIND_CODES, KIND_NAMES
from worker.terms import query_groups, query_terms

Mode = Literal["hybrid", "keyword", "semantic"]
# Each item's judged injections: (outcome, decided_at, prompt id) (store/use.py).
UseHistory = dict[Ref, list[tuple[str, int, int | None]]]
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "semantic")
# Keyword hits whose coverage is checked for the refusal rule.
COVERAGE_DEPTH = 10
# Vector hits whose own (non-context) vectors are checked by the refusal rule.
REFUSAL_DEPTH = 50
# Vector hits past REFUSAL_DEPTH whose own vectors are read with those (in case some are dead).
REFUSAL_SPARE = 10
# Hits whose thread neighbours get a share of their score.
THREAD_DEPTH = 50
# Grace between a file write and the observation recording it (same tool call).
STALE_GRACE_MS = 5_000
# Ranked hits whose vectors the de-duplication reads at a time.
DEDUPE_PAGE = 30
# Ranked hits judged one by one for the prompt context (per wanted hit): the relevance model
# looks at 64 for 8 wanted (at 32, 28 of the corpus's 164 answerable probes had no relevant
# candidate; at 64, 20); words alone (keyword-only mode) at 32, as tuned.
JUDGE_DEPTH = 8
KEYWORD_JUDGE_DEPTH = 4
# The memories closest to the prompt are judged wherever the ranking put them. A memory is what
# someone chose to keep, few beside months of tool calls; asked for in other words than it was
# written in, it shares no word with the prompt and sits at a modest cosine, below a hundred
# routine items of the same topic. Padded to ~3,000 items a project, 32 of the coding-memory
# corpus's missed markers never reached the judged window, 11 with this reserve.
MEMORY_RESERVE = 8
# The most items of the judged hits' sessions read as their session-mates (the thread features'
# evidence, never judged themselves). Months of routine history push the rest of a session's work
# out of the judged window and out of every candidate list, while it still says what the session
# was about.
THREAD_MATES = 256


@dataclass
class SearchRequest:
    query: str
    project: str | None = None
    kinds: list[str] | None = None
    types: list[str] | None = None
    mode: Mode = "hybrid"
    limit: int = 10
    include_archived: bool = False
    exclude: set[Ref] = field(default_factory=set)
    # The prompt being answered was just stored: never offer a session its own prompts.
    exclude_session_prompts: str | None = None
    count_retrieval: bool = False
    # Off only for measuring ranking alone (bench/locomo.py); the API always applies it.
    apply_refusal: bool = True
    # The prompt context: instead of one refusal for the whole query, each hit must be relevant
    # on its own evidence (retrieval/relevance.py); nothing relevant -> refused.
    judge_items: bool = False
    # On a team database, whose private prompts and observations may be found (Cairn.reader):
    # the others' only when shared. None: every item (the local database is one user's).
    reader: str | None = None


@dataclass
class SearchOutcome:
    hits: list[Candidate]
    items: dict[Ref, dict[str, Any]]
    refused: bool
    mode: Mode
    project_id: int | None
    coverage: float = 0.0
    best_cosine: float | None = None
    embeddings: str = "disabled"
    # The prompt context: every candidate judged, with its features and probability (preview).
    judged: list[Candidate] = field(default_factory=list)


@dataclass
class _KeywordPass:
    groups: list[tuple[str, ...]]
    hits: list[tuple[Ref, float]]
    df: dict[str, int]
    n_docs: int
    # Keyword-only mode: the query's frequencies within the searched scope (keyword_judgment).
    scope: keyword_judgment.ScopeFrequencies | None = None
    # The session's own prompts (SearchRequest.exclude_session_prompts), as sets of indexed
    # terms, and their refs: counted out of every frequency and list of hits.
    asked: list[set[str]] = field(default_factory=list)
    own: set[Ref] = field(default_factory=set)
    # The prompt's own terms when it is judged for its context: counted in once.
    itself: set[str] = field(default_factory=set)

    def weighed(self, df: Mapping[str, int], rows: int) -> tuple[dict[str, int], int]:
        """Frequencies as the judgment weighs them (see _keyword_pass)."""
        return _count_in(*_count_out(df, rows, self.asked), self.itself)


def _keyword_pass(
    conn: AnyDb,
    req: SearchRequest,
    s: Settings,
    project_id: int | None,
    want_keyword: bool,
    index: KeywordScorer,
) -> _KeywordPass:
    groups = query_groups(req.query, s.search.max_query_terms)
    terms = query_terms(req.query, s.search.max_query_terms)
    wanted = sorted({t for g in groups for t in g} | set(terms))
    df, rows = index.frequencies(conn, wanted)
    # The prompt being answered is stored before its context is asked for (the hook posts both
    # in one call), or not at all (the preview, a client that only asks). Either way the
    # search weighs the same: the session's own prompts are counted out of every frequency and
    # list of hits (never a hit, they took the first keyword and vector ranks from the items),
    # and a prompt judged for its context counts in once, as a document of its project (a word
    # that only the prompt holds is one the project never wrote: the prompt is about
    # something else). What the preview shows is then what the hook is given.
    kw = _KeywordPass(groups, [], {}, 0, itself=set(wanted) if req.judge_items else set())
    if req.exclude_session_prompts is not None:
        own = q.session_prompts(conn, req.exclude_session_prompts, project_id)
        kw.own = set(own)
        kw.asked = [set(text.split()) for text in q.indexed_terms(conn, own).values()]
    others, other_rows = _count_out(df, rows, kw.asked)
    kw.df, weighed_rows = kw.weighed(df, rows)
    terms = one_stem_per_part(terms, groups, kw.df)
    kw.n_docs = weighed_rows if terms else 0
    # Which words are worth matching: by the others' frequencies (the question's own words
    # must not look too common to match for being in it).
    chosen = selective_terms(terms, others, other_rows if terms else 0, s.search.common_term_share)
    if chosen and want_keyword:
        kw.hits = _memory_hits(conn, index, chosen, req, s, project_id, kw.own)
    return kw


def _count_out(
    df: Mapping[str, int], rows: int, asked: list[set[str]]
) -> tuple[dict[str, int], int]:
    """Frequencies without these rows (each given as its set of indexed terms)."""
    out = dict(df)
    for terms in asked:
        for term in terms & out.keys():
            out[term] = max(0, out[term] - 1)
    return out, max(0, rows - len(asked))


def _count_in(df: Mapping[str, int], rows: int, terms: set[str]) -> tuple[dict[str, int], int]:
    """Frequencies with one more row holding `terms` (none: unchanged)."""
    if not terms:
        return dict(df), rows
    return {**df, **{t: df.get(t, 0) + 1 for t in terms}}, rows + 1


def _memory_hits(
    conn: AnyDb,
    index: KeywordScorer,
    terms: list[str],
    req: SearchRequest,
    s: Settings,
    project_id: int | None,
    drop: set[Ref],
) -> list[tuple[Ref, float]]:
    """The search's best keyword hits but the rows in `drop`."""
    codes = None
    if req.kinds is not None:
        codes = [KIND_CODES[k] for k in req.kinds if k in KIND_CODES]
        if not codes:
            return []
    rows = index.top(
        terms,
        project_id=project_id,
        kind_codes=codes,
        limit=s.search.candidates + len(drop),
        title_weight=s.search.title_weight,
        body_weight=s.search.body_weight,
        conn=conn,
    )
    hits = [((KIND_NAMES[rowid % 8], rowid // 8), score) for rowid, score in rows]
    return [(ref, score) for ref, score in hits if ref not in drop][: s.search.candidates]


def one_stem_per_part(
    terms: list[str], groups: list[tuple[str, ...]], df: dict[str, int]
) -> list[str]:
    """The terms to match, with one stem per word part: of a part's English and Italian stems,
    the one found in more items (the corpus's language conflates more forms; ties keep English).

    Every document word is indexed under both its stems, so matching both would score each
    such part twice, outweighing parts whose stems agree, and make the index add up two
    posting lists that hold nearly the same rows. Whole compound identifiers are kept as they are."""
    keep: set[str] = set()
    alternatives: set[str] = set()
    for group in groups:
        if len(group) > 1:
            alternatives.update(group)
            keep.add(max(group, key=lambda t: df.get(t, 0)))
        else:
            keep.add(group[0])
    return [t for t in terms if t in keep or t not in alternatives]


COMMON_FLOOR = 50
# How many more vector hits a search with a session's own prompts to count out asks for: the
# prompt being answered is its own closest vector once embedded, the session's others may follow.
OWN_PROMPT_SPARE = 4


def selective_terms(
    terms: list[str], df: dict[str, int], n_docs: int, common_share: float
) -> list[str]:
    """The terms worth matching: present somewhere, and not in most documents (a word found
    everywhere barely moves BM25 but makes the index score every row). If every term is common,
    the rarest few still match."""
    present = [t for t in terms if df.get(t, 0) > 0]
    # The cut is for speed: a term held by a few dozen rows costs nothing to score, however
    # large a share of a small project that is (in a project of 6 items, 2 is not "most").
    limit = max(COMMON_FLOOR, common_share * n_docs)
    chosen = [t for t in present if df[t] <= limit]
    if not chosen:
        chosen = sorted(present, key=lambda t: df[t])[:3]
    return chosen


def _live(item: dict[str, Any], req: SearchRequest, now: int) -> bool:
    if req.reader is not None and not item["shared"] and item["author"] != req.reader:
        return False  # a teammate's private prompt or observation
    if not req.include_archived:
        if item.get("archived_at") is not None or item.get("superseded_by") is not None:
            return False
        expires = item.get("expires_at")
        if expires is not None and int(expires) <= now:
            return False
    if (
        req.exclude_session_prompts is not None
        and item["kind"] == "prompt"
        and item.get("session_id") == req.exclude_session_prompts
    ):
        return False
    return not (req.types and item.get("type") not in req.types)


def _modified_ms(files: list[str], project: str | None) -> dict[str, float]:
    """Each file's modification time on disk (ms), for the files that exist; relative paths
    resolve in the project root. One stat per distinct file; none when the root is missing."""
    root = project if project and os.path.isabs(project) and os.path.isdir(project) else None
    out: dict[str, float] = {}
    for name in files:
        path = name if os.path.isabs(name) else (os.path.join(root, name) if root else None)
        if path is None:
            continue
        try:
            out[name] = os.stat(path).st_mtime * 1000
        except (OSError, ValueError):
            continue
    return out


def stale_refs(conn: AnyDb, items: dict[Ref, dict[str, Any]]) -> set[Ref]:
    """Observations about files whose content changed since they were captured: a later
    file_write observation touched the file, or the file on disk is newer."""
    by_project: dict[int, list[tuple[Ref, dict[str, Any]]]] = {}
    for ref, item in items.items():
        if ref[0] == "observation" and item.get("files"):
            by_project.setdefault(int(item["project_id"]), []).append((ref, item))
    stale: set[Ref] = set()
    for project_id, members in by_project.items():
        files = sorted({f for _, item in members for f in item["files"][:20]})
        since = min(int(item["created_at"]) for _, item in members)
        writes = q.later_file_writes(conn, project_id, files[:500], since)
        on_disk = _modified_ms(files, members[0][1].get("project"))
        for ref, item in members:
            limit = int(item["created_at"]) + STALE_GRACE_MS
            if any(
                writes.get(f, 0) > limit or on_disk.get(f, 0) > limit for f in item["files"][:20]
            ):
                stale.add(ref)
    return stale


def _dedupe(
    ranked: list[Candidate],
    items: dict[Ref, dict[str, Any]],
    service: EmbeddingService | None,
    threshold: float,
    limit: int,
) -> list[Candidate]:
    kept: list[Candidate] = []
    hashes: set[str] = set()
    vectors: list[npt.NDArray[np.float32]] = []
    known: dict[Ref, npt.NDArray[np.float32]] = {}
    asked: set[Ref] = set()
    for i, cand in enumerate(ranked):
        digest = items[cand.ref].get("content_hash")
        if digest and digest in hashes:
            continue
        if service is not None and cand.ref not in asked:
            # A page of vectors at a time: one query each on a team database.
            page = [c.ref for c in ranked[i : i + DEDUPE_PAGE]]
            asked.update(page)
            known.update(service.vectors(page))
        vector = known.get(cand.ref)
        if vector is not None and any(float(v @ vector) >= threshold for v in vectors):
            continue
        if digest:
            hashes.add(digest)
        if vector is not None:
            vectors.append(vector)
        kept.append(cand)
        if len(kept) >= limit:
            break
    return kept


async def _clause_cosines(
    service: EmbeddingService | None,
    query_vector: npt.NDArray[np.float32] | None,
    top: list[Candidate],
    items: dict[Ref, dict[str, Any]],
) -> dict[Ref, float]:
    """The best clause cosine of each memory among the candidates (retrieval/clauses.py) whose
    whole text is not too far from the prompt to have a close clause; nothing without a query
    vector."""
    if query_vector is None or service is None:
        return {}
    texts = {
        c.ref: memory_text(items[c.ref])
        for c in top
        if c.ref[0] == "memory"
        and c.plain_cosine is not None
        and c.plain_cosine >= clauses.MIN_WHOLE_COSINE
    }
    if not texts:
        return {}
    vector = query_vector
    return await anyio.to_thread.run_sync(lambda: service.clause_cosines(vector, texts))


def distinct_top(
    ranked: list[Candidate],
    items: dict[Ref, dict[str, Any]],
    depth: int,
    reserved: set[Ref] | None = None,
) -> list[Candidate]:
    """The best `depth` ranked hits worth judging, each text once. Months of routine use repeat
    the same item (the same file read, the same green test run, the same session summary) dozens
    of times; judged one by one, the copies filled the window and pushed the one item that
    mattered out of it (padded to ~3,000 items a project, 45 of 164 answerable prompts had no
    relevant candidate). The best-ranked copy stands for the rest, as the final de-duplication
    would keep it anyway. The `reserved` hits (the memories closest to the prompt) are taken
    wherever they rank, past the `depth` best."""
    seen: set[str] = set()
    out: list[Candidate] = []
    pending = set(reserved or ())
    for cand in ranked:
        if len(out) >= depth:  # past the best: only what is reserved
            if not pending:
                break
            if cand.ref not in pending:
                continue
        pending.discard(cand.ref)
        item = items[cand.ref]
        if ranking.said_nothing(item):
            continue
        digest = item.get("content_hash")
        if digest:
            if digest in seen:
                continue
            seen.add(digest)
        out.append(cand)
    return out


def session_mates(
    top: list[Candidate],
    items: Mapping[Ref, Mapping[str, Any]],
    rows: list[tuple[Ref, str, int]],
    window_ms: int,
    limit: int,
) -> dict[Ref, dict[str, Any]]:
    """Of the session items read (store/search.session_items), those not judged that were written
    within `window_ms` of a judged item of their session, as the `threads` items they are
    (session and time), at most `limit`: each session in turn gives its next closest in time to
    one of its judged items, so one long session does not crowd out the others."""
    judged = {c.ref for c in top}
    times: dict[str, list[int]] = {}
    for cand in top:
        sid = str(items[cand.ref].get("session_id") or "")
        if sid:
            times.setdefault(sid, []).append(int(items[cand.ref].get("created_at") or 0))
    near: dict[str, list[tuple[int, Ref, int]]] = {}
    for ref, sid, at in rows:
        gap = min((abs(at - t) for t in times.get(sid, ())), default=window_ms + 1)
        if ref not in judged and gap <= window_ms:
            near.setdefault(sid, []).append((gap, ref, at))
    queues = [sorted(found, key=lambda row: row[0]) for found in near.values()]
    out: dict[Ref, dict[str, Any]] = {}
    for turn in range(max(map(len, queues), default=0)):
        for queue, sid in zip(queues, near, strict=True):
            if turn < len(queue) and len(out) < limit:
                _, ref, at = queue[turn]
                out[ref] = {"session_id": sid, "created_at": at}
    return out


def threads(
    top: list[Candidate],
    items: Mapping[Ref, Mapping[str, Any]],
    clause: Mapping[Ref, float],
    window_ms: int,
    mates: list[Candidate] | None = None,
) -> dict[Ref, tuple[float, float]]:
    """Each candidate's best other candidate of the same stretch of work (its session, within
    `window_ms` of it: a long session moves on to other things): (cosine, coverage), zeros for
    an item of no session or alone in it. `mates` (items of those sessions that are not judged, in
    `items` too) count as others of their session, and get no figures of their own."""
    sessions: dict[str, list[Candidate]] = {}
    for cand in [*top, *(mates or ())]:
        sid = str(items[cand.ref].get("session_id") or "")
        if sid:
            sessions.setdefault(sid, []).append(cand)
    out: dict[Ref, tuple[float, float]] = {}
    for cand in top:
        item = items[cand.ref]
        at = int(item.get("created_at") or 0)
        others = [
            m
            for m in sessions.get(str(item.get("session_id") or ""), [])
            if m is not cand and abs(int(items[m.ref].get("created_at") or 0) - at) <= window_ms
        ]
        out[cand.ref] = (
            max((max(m.plain_cosine or 0.0, clause.get(m.ref, 0.0)) for m in others), default=0.0),
            max((m.coverage or 0.0 for m in others), default=0.0),
        )
    return out


async def _judged(
    store: Backend,
    settings: Settings,
    service: EmbeddingService | None,
    kw: _KeywordPass,
    query_vector: npt.NDArray[np.float32] | None,
    ranked: list[Candidate],
    items: dict[Ref, dict[str, Any]],
    req: SearchRequest,
    project_id: int | None,
    reserved: set[Ref] | None = None,
) -> tuple[list[Candidate], list[Candidate]]:
    """The ranked hits that matter at the prompt, most probable first, and every candidate
    judged. With a query vector the relevance model decides (retrieval/relevance.py); with
    words alone (keyword-only mode) the keyword rules (retrieval/keyword_judgment.py)."""
    names = judgment.code_names(req.query)
    depth = req.limit * (KEYWORD_JUDGE_DEPTH if query_vector is None else JUDGE_DEPTH)
    top = (
        [c for c in ranked[:depth] if not ranking.said_nothing(items[c.ref])]
        if query_vector is None
        else distinct_top(ranked, items, depth, reserved)
    )
    refs = [c.ref for c in top]
    # Only the relevance model reads what each item's session went on to do.
    sessions = [] if query_vector is None else [str(items[r].get("session_id") or "") for r in refs]
    window = int(settings.search.thread_window_minutes * 60_000)
    at = [
        int(items[r].get("created_at") or 0)
        for r in refs
        if sessions and items[r].get("session_id")
    ]
    span = (min(at, default=0) - window, max(at, default=0) + window)
    judged_refs = set(refs)

    now = now_ms()

    learning = query_vector is not None and settings.learning.enabled

    def evidence(
        conn: AnyDb,
    ) -> tuple[dict[Ref, str], dict[str, int], UseHistory, dict[Ref, dict[str, Any]]]:
        # What each item's earlier injections became (learning from use): the model's decision
        # only; keyword-only mode keeps its rules.
        history = use_store.history(conn, refs) if learning else {}
        rows = q.session_items(conn, project_id, sessions, span, req.reader) if at else []
        mates = session_mates(top, items, rows, window, THREAD_MATES)
        indexed = q.indexed_terms(conn, refs + list(mates))
        return indexed, q.session_activity(conn, sessions), history, mates

    indexed, activity, history, mate_items = await store.read(evidence)
    mates = [Candidate(ref) for ref in mate_items]
    mate_refs = list(mate_items)
    if query_vector is None and kw.scope is not None:  # judged on its words alone
        scope = kw.scope
        kept: list[Candidate] = []
        for cand in top:
            if judgment.title_only(items[cand.ref], names):
                continue
            found = keyword_judgment.evidence(
                kw.groups, set(indexed.get(cand.ref, "").split()), scope
            )
            cand.coverage = found.coverage
            # A code name of the prompt held is evidence on its own here.
            if keyword_judgment.item_relevant(
                cand.ref[0], found, settings, scope.rows
            ) or judgment.shares_name(names, items[cand.ref]):
                kept.append(cand)
        floor = settings.judgment.prompt_relative_floor
        return judgment.best_memory_first(judgment.within_floor(kept, floor)), top
    cosines: dict[Ref, float] = {}
    if query_vector is not None and service is not None:
        vector = query_vector
        both = refs + mate_refs
        cosines = await anyio.to_thread.run_sync(lambda: service.plain_cosines(vector, both))
    scoped: dict[Ref, keyword_judgment.Evidence] = {}
    for cand in top + mates:
        terms = set(indexed.get(cand.ref, "").split())
        cand.plain_cosine = cosines.get(cand.ref)
        cand.coverage = ranking.coverage(kw.groups, terms, kw.df, kw.n_docs)
        if kw.scope is not None and cand.ref in judged_refs:
            scoped[cand.ref] = keyword_judgment.evidence(kw.groups, terms, kw.scope)
    clause = await _clause_cosines(service, query_vector, top, items)
    proved: dict[Ref, float] = {}
    if history and query_vector is not None and service is not None:
        asked = [("prompt", p) for rows in history.values() for _, _, p in rows if p is not None]
        vector = query_vector
        alike = await anyio.to_thread.run_sync(lambda: service.plain_cosines(vector, asked))
        likeness = {ref[1]: cos for ref, cos in alike.items()}
        proved = usefulness.shifts(history, items, settings, now, likeness)
    model = relevance.load_model()
    rows = kw.scope.rows if kw.scope is not None else 0
    worked_in = {c.ref: activity.get(str(items[c.ref].get("session_id") or ""), 0) for c in top}
    # What is never given (an earlier prompt whose session did no work) sets no bar for the rest:
    # a question asked again would otherwise make its first asking the best hit, and every hit
    # that answers it look far behind.
    givable = [c for c in top if not relevance.only_the_question_of(c.ref[0], worked_in[c.ref])]
    shown = {c.ref: scoped[c.ref] for c in givable if c.ref in scoped}
    view = relevance.prompt_view(givable, clause, names, shown, rows, req.query)
    thread = threads(top, {**items, **mate_items}, clause, window, mates)
    for cand in top:
        item = items[cand.ref]
        worked = worked_in[cand.ref]
        cand.features = relevance.features(
            cand, item, clause.get(cand.ref), scoped.get(cand.ref), view, worked, thread[cand.ref]
        )
        # Usefulness enters as log-odds with a known weight (one): an item used more than most
        # clears the cut more easily, one given often and never used needs more evidence.
        shift = proved.get(cand.ref, 0.0)
        if shift:
            cand.features["usefulness"] = round(shift, 4)
        cand.relevance = (
            0.0
            if relevance.only_the_question(cand.features)
            else sigmoid(model.logit(cand.features) + shift)
        )
    cut = model.cut(settings.judgment.prompt_strictness)
    kept = [c for c in top if (c.relevance or 0.0) >= cut]
    kept.sort(key=lambda c: -(c.relevance or 0.0))
    return kept, top


async def search(
    store: Backend,
    settings: Settings,
    service: EmbeddingService | None,
    req: SearchRequest,
    *,
    keywords: KeywordScorer,
) -> SearchOutcome:
    now = now_ms()
    ready = service is not None and service.ready
    status = service.state if service is not None else "disabled"
    mode: Mode = req.mode
    if mode == "semantic" and not ready:
        mode = "keyword"  # degraded: the model is not available (status says why)
    want_keyword = mode in ("hybrid", "keyword")
    embedder = service if mode in ("hybrid", "semantic") and ready else None
    key = req.project
    project_id = await store.read(lambda c: projects.find(c, key)) if key is not None else None
    empty = SearchOutcome([], {}, True, mode, project_id, embeddings=status)
    if (key is not None and project_id is None) or not req.query.strip():
        return empty
    # The query is embedded and the project's vectors scanned (ONNX, then a brute-force matrix
    # product, ~15 ms at 100k, or on a team database with pgvector its HNSW index) in one thread
    # while the database runs the keyword pass in another: all three release the GIL, so on two
    # cores their times overlap instead of adding up.
    found: list[
        tuple[npt.NDArray[np.float32] | None, list[tuple[Ref, float]], list[tuple[Ref, float]]]
    ] = [(None, [], [])]
    reserve_memories = req.judge_items and (req.kinds is None or "memory" in req.kinds)
    # Room for the session's own prompts among the closest vectors (counted out below).
    spare = OWN_PROMPT_SPARE if req.exclude_session_prompts is not None else 0

    def vector_pass(model: EmbeddingService) -> None:
        model.follow()  # vectors other workers of a team database stored
        vector, index = model.embed_query(req.query), model.index
        if vector is not None and index is not None:
            hits = index.search(
                vector,
                project_id=project_id,
                kinds=req.kinds,
                limit=settings.search.candidates + spare,
            )
            memories = (
                index.search(vector, project_id=project_id, kinds=["memory"], limit=MEMORY_RESERVE)
                if reserve_memories
                else []
            )
            found[0] = (vector, hits, memories)

    try:
        async with anyio.create_task_group() as tasks:
            if embedder is not None:
                tasks.start_soon(anyio.to_thread.run_sync, vector_pass, embedder)
            kw = await store.read(
                lambda c: _keyword_pass(c, req, settings, project_id, want_keyword, keywords)
            )
    except* StoreError as group:
        # The task group wraps what its body raised: the store's refusal (a team database
        # down) must reach the error handlers as itself, a 503, not as an unhandled group (500).
        raise group.exceptions[0] from None
    query_vector, vector_hits, close_memories = found[0]
    vector_hits = [(ref, cos) for ref, cos in vector_hits if ref not in kw.own][
        : settings.search.candidates
    ]
    best_cosine = vector_hits[0][1] if vector_hits else None
    weights = Weights.from_settings(settings)
    complete = len(kw.hits) < settings.search.candidates  # every keyword match is listed
    candidates = ranking.fuse(kw.hits, vector_hits, weights, complete)
    for ref, cosine in close_memories:
        if ref not in candidates:  # judged below, on its own evidence (no rank in either list)
            candidates[ref] = Candidate(ref, cosine=cosine)
    window_ms = int(settings.search.thread_window_minutes * 60_000)

    def load(
        conn: AnyDb,
    ) -> tuple[list[Ref], dict[Ref, dict[str, Any]], dict[Ref, str], set[Ref]]:
        if weights.prev > 0 or weights.next > 0:
            top = sorted(candidates.values(), key=lambda c: -c.fused)[:THREAD_DEPTH]
            ranking.spread(
                candidates, item_rows.neighbours(conn, [c.ref for c in top], window_ms), weights
            )
        refs = [r for r in candidates if r not in req.exclude]
        items = {
            ref: item
            for ref, item in item_rows.load_items(conn, refs).items()
            if _live(item, req, now)
        }
        top_keyword = [ref for ref, _ in kw.hits if ref in items][:COVERAGE_DEPTH]
        if query_vector is None or req.judge_items:
            scope = keyword_judgment.scope_frequencies(keywords, kw.groups, project_id, kw.df, conn)
            df, rows = kw.weighed(scope.df, scope.rows)
            kw.scope = keyword_judgment.ScopeFrequencies(df, rows, scope.everywhere)
        return refs, items, q.indexed_terms(conn, top_keyword), stale_refs(conn, items)

    # The refusal rule's plain cosines of the closest vector hits are read while the candidates
    # load (on a team database a query of its own, which then costs no extra wait): most of
    # those hits turn out live; the few that replace dead ones are read after.
    plain: dict[Ref, float] = {}
    asked = [ref for ref, _ in vector_hits[: REFUSAL_DEPTH + REFUSAL_SPARE]]

    async def read_plain(model: EmbeddingService, vector: npt.NDArray[np.float32]) -> None:
        plain.update(await anyio.to_thread.run_sync(lambda: model.plain_cosines(vector, asked)))

    try:
        async with anyio.create_task_group() as tasks:
            if query_vector is not None and service is not None and asked:
                tasks.start_soon(read_plain, service, query_vector)
            refs, items, indexed, stale = await store.read(load)
    except* StoreError as group:
        raise group.exceptions[0] from None
    if req.judge_items and stale:
        # A prompt that names a file asks for its history: an earlier edit of it is not
        # outdated for that prompt, though the file has changed since.
        names = judgment.code_names(req.query)
        stale = {ref for ref in stale if not judgment.shares_name(names, items[ref])}
    if query_vector is None and kw.scope is not None:
        best_coverage = keyword_judgment.best_coverage(kw.groups, indexed.values(), kw.scope)
    else:
        best_coverage = max(
            (
                ranking.coverage(kw.groups, set(text.split()), kw.df, kw.n_docs)
                for text in indexed.values()
            ),
            default=0.0,
        )
    best_live_cosine: float | None = None
    if query_vector is not None and service is not None:
        close = [ref for ref, _ in vector_hits if ref in items][:REFUSAL_DEPTH]
        read = set(asked)
        later = [ref for ref in close if ref not in read]
        if later:
            vector, model = query_vector, service
            plain.update(await anyio.to_thread.run_sync(lambda: model.plain_cosines(vector, later)))
        cosines = [plain[ref] for ref in close if ref in plain]
        best_live_cosine = max(cosines) if cosines else None
        best_cosine = best_live_cosine
    if query_vector is None and kw.scope is not None:
        refuse = not req.judge_items and keyword_judgment.refuse(best_coverage, settings)
    else:
        refuse = not req.judge_items and ranking.refuse(best_coverage, best_live_cosine, settings)
    if req.apply_refusal and refuse:
        empty.coverage, empty.best_cosine = best_coverage, best_cosine
        return empty
    ranked = ranking.rank(
        (candidates[r] for r in refs),
        items,
        now=now,
        project_id=project_id,
        stale=stale,
        weights=weights,
        dates=date_ranges(req.query),
    )
    judged: list[Candidate] = []
    if req.judge_items:
        reserved = {ref for ref, _ in close_memories}
        ranked, judged = await _judged(
            store, settings, service, kw, query_vector, ranked, items, req, project_id, reserved
        )
    dedupe_with = service if ready else None
    # In a thread: on a team database the hits' vectors are read from it.
    hits = await anyio.to_thread.run_sync(
        lambda: _dedupe(ranked, items, dedupe_with, settings.search.dedupe_cosine, req.limit)
    )
    if req.count_retrieval and hits:
        chosen = [c.ref for c in hits]
        await store.write(lambda c: q.count_retrievals(c, chosen, now))
    return SearchOutcome(
        hits=hits,
        items=items,
        refused=not hits,
        mode=mode,
        project_id=project_id,
        coverage=best_coverage,
        best_cosine=best_cosine,
        embeddings=status,
        judged=judged,
    )
