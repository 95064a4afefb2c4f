"""Consolidation: find near-duplicate memories in a scope, keep the more important one, fold the other in.

Similarity is the cosine of stored embeddings when both memories have one (threshold
`compress_threshold`, default 0.88); a memory without a vector is compared lexically (the share of
the shorter memory's content words found in the other, `compress_lexical_threshold`, default 0.8,
with a Jaccard floor of 0.5), and the answer says so. Two near-duplicates that hold
different values (PostgreSQL 15 / 16) are not merged: the newer one supersedes the older instead.
"""

from __future__ import annotations

import math
import re
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from worker.clock import now_ms
from worker.memory.statement import features
from worker.memory.supersession import supersedes
from worker.memory.tags import content_words, normalise_tags
from worker.settings import Settings
from worker.store import lifecycle, memories
from worker.store import relations as relations_store
from worker.store.db import AnyDb, Row
from worker.store.memories import KIND_RANK
from worker.store.rows import dump_json, load_json, normalised_hash
from worker.store.vectors import from_blob

Pair = tuple[int, int, float]
BLOCK_ROWS = 1024
# Lexical near-duplicates must also share at least half of all their words (Jaccard).
JACCARD_FLOOR = 0.5
# A word in more than this share of a scope's memories (and more than COMMON_MIN of them) does not
# seed lexical candidates.
COMMON_SHARE = 0.005
COMMON_MIN = 50
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def vector_pairs(
    ids: Sequence[int], matrix: npt.NDArray[np.float32], threshold: float
) -> list[Pair]:
    """Pairs (a, b, cosine) with a < b in row order and cosine >= threshold (rows L2-normalised)."""
    out: list[Pair] = []
    n = len(ids)
    for start in range(0, n, BLOCK_ROWS):
        block = matrix[start : start + BLOCK_ROWS] @ matrix[start:].T
        rows, cols = np.nonzero(block >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i, j = start + r, start + c
            if j > i:
                out.append((ids[i], ids[j], float(block[r, c])))
    return out


def lexical_pairs(
    docs: Mapping[int, frozenset[str]], threshold: float, jaccard_floor: float = JACCARD_FLOOR
) -> list[Pair]:
    """Pairs whose overlap (share of the smaller set found in the other) >= threshold.

    Memories with the same words pair with the first of them (a star, not every pair); distinct
    word sets are joined on Jaccard >= `jaccard_floor` by prefix filtering (each set indexed by
    its rarest words), so the cost follows the pairs that are alike, not n squared.
    """
    groups: dict[frozenset[str], list[int]] = defaultdict(list)
    for doc_id in sorted(docs):
        if docs[doc_id]:
            groups[docs[doc_id]].append(doc_id)
    out: list[Pair] = []
    for ids in groups.values():
        out.extend((ids[0], other, 1.0) for other in ids[1:])
    freq: dict[str, int] = defaultdict(int)
    for words in groups:
        for w in words:
            freq[w] += 1
    ordered = sorted(
        (
            (sorted(words, key=lambda w: (freq[w], w)), words, ids[0])
            for words, ids in groups.items()
        ),
        key=lambda entry: (len(entry[0]), entry[2]),
    )
    # Words in many memories only seed candidates that the rarer words find anyway; skipping
    # them keeps the join near linear (a pair alike only in very common words is not found).
    common = max(COMMON_MIN, int(COMMON_SHARE * len(groups)))
    index: dict[str, list[int]] = defaultdict(list)
    for position, (tokens, mine, first) in enumerate(ordered):
        size = len(tokens)
        prefix = [
            w for w in tokens[: size - math.ceil(jaccard_floor * size) + 1] if freq[w] <= common
        ]
        seen: set[int] = set()
        for w in prefix:
            for other in index[w]:
                if other in seen:
                    continue
                seen.add(other)
                _, theirs, their_first = ordered[other]
                if len(theirs) < jaccard_floor * size:
                    continue
                shared = len(mine & theirs)
                if shared / (len(mine) + len(theirs) - shared) < jaccard_floor:
                    continue
                overlap = shared / min(len(mine), len(theirs))
                if overlap >= threshold:
                    pair = (min(first, their_first), max(first, their_first), round(overlap, 4))
                    out.append(pair)
        for w in prefix:
            index[w].append(position)
    return out


def keeper_rank(row: Mapping[str, Any]) -> tuple[int, int, int, int, int]:
    """Higher wins: pinned, importance, kind, uses, then the newer memory."""
    return (
        int(row["pinned"]),
        int(row["importance"]),
        KIND_RANK.get(row["kind"], 0),
        int(row["hit_count"]) + int(row["retrieval_count"]),
        int(row["id"]),
    )


def additions(keeper: str, other: str, covered: float = 0.8) -> str:
    """The sentences of `other` that say something `keeper` does not (most words not in it)."""
    known = set(content_words(keeper))
    extra: list[str] = []
    for sentence in _SENTENCE.split(other):
        words = set(content_words(sentence))
        if not words:
            continue
        if len(words & known) / len(words) < covered:
            extra.append(sentence.strip())
            known |= words
    return " ".join(extra)


@dataclass
class Plan:
    method: str = "none"
    merges: list[dict[str, Any]] = field(default_factory=list)
    supersessions: list[dict[str, Any]] = field(default_factory=list)
    changed: list[int] = field(default_factory=list)  # keepers whose text changed (re-embed)
    scanned: int = 0
    embedded: int = 0


def _candidate_pairs(
    conn: AnyDb, project_id: int | None, rows: list[Row], s: Settings
) -> tuple[list[tuple[int, int, float, str]], int]:
    live = {int(r["id"]) for r in rows}
    ids, blobs, _model = lifecycle.memory_vectors(conn, project_id)
    keep = [(i, b) for i, b in zip(ids, blobs, strict=True) if i in live]
    embedded = {i for i, _ in keep}
    pairs: list[tuple[int, int, float, str]] = []
    if len(keep) > 1:
        vectors = [from_blob(b) for _, b in keep]
        dims = {v.shape[0] for v in vectors}
        if len(dims) == 1:
            matrix = np.vstack(vectors).astype(np.float32)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix /= np.where(norms == 0, 1, norms)
            found = vector_pairs([i for i, _ in keep], matrix, s.lifecycle.compress_threshold)
            pairs.extend((a, b, sim, "embeddings") for a, b, sim in found)
        else:
            embedded = set()
    if len(embedded) < len(live):
        docs = {int(r["id"]): frozenset(content_words(r["content"])) for r in rows}
        for a, b, sim in lexical_pairs(docs, s.lifecycle.compress_lexical_threshold):
            if not (a in embedded and b in embedded):
                pairs.append((a, b, sim, "lexical"))
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs, len(embedded)


def plan_scope(conn: AnyDb, project_id: int | None, s: Settings, *, dry_run: bool) -> Plan:
    """Find and (unless dry_run) apply merges and supersessions in one scope."""
    rows = memories.live_in_scope(conn, project_id)
    plan = Plan(scanned=len(rows))
    if len(rows) < 2:
        return plan
    pairs, plan.embedded = _candidate_pairs(conn, project_id, rows, s)
    methods = {m for *_, m in pairs} or {"embeddings" if plan.embedded else "lexical"}
    plan.method = "+".join(sorted(methods))
    state: dict[int, dict[str, Any]] = {int(r["id"]): dict(r) for r in rows}
    gone: set[int] = set()
    now = now_ms()
    for a, b, sim, method in pairs:
        if a in gone or b in gone:
            continue
        first, second = state[a], state[b]
        older, newer = sorted((first, second), key=lambda r: (r["created_at"], r["id"]))
        conflict = supersedes(features(newer["content"]), features(older["content"]))
        if conflict is not None and (first["dated"] or second["dated"]):
            # Imported history (dated) is true at its time: never chained into an update, nor
            # folded ("PostgreSQL 15" in 2022 and "16" in 2023 are both history).
            continue
        if conflict is not None:
            plan.supersessions.append(
                {"new_id": newer["id"], "old_id": older["id"], "similarity": round(sim, 4)}
            )
            gone.add(int(older["id"]))
            if not dry_run:
                relations_store.add(conn, newer["id"], older["id"], "updates", "supersession")
            continue
        keep, drop = sorted((first, second), key=keeper_rank, reverse=True)
        extra = additions(keep["content"], drop["content"])
        content = keep["content"] + ("\n" + extra if extra else "")
        if len(content) > s.limits.max_text_chars:
            extra, content = "", keep["content"]
        plan.merges.append(
            {
                "keep_id": keep["id"],
                "archive_id": drop["id"],
                "similarity": round(sim, 4),
                "method": method,
                "appended": extra,
            }
        )
        gone.add(int(drop["id"]))
        if not dry_run and _apply_merge(conn, keep, drop, content, now, s):
            plan.changed.append(int(keep["id"]))
        keep["content"] = content
    return plan


def _apply_merge(
    conn: AnyDb,
    keep: dict[str, Any],
    drop: dict[str, Any],
    content: str,
    now: int,
    s: Settings,
) -> bool:
    """Fold `drop` into `keep`; True when the keeper's indexed text (content, tags) changed."""
    tags = normalise_tags(
        [
            *load_json(keep["tags"], [], field="memories.tags"),
            *load_json(drop["tags"], [], field="memories.tags"),
        ],
        s.limits.max_tags,
    )
    changes: dict[str, Any] = {
        "importance": max(int(keep["importance"]), int(drop["importance"])),
        "pinned": 1 if keep["pinned"] or drop["pinned"] else 0,
        "hit_count": int(keep["hit_count"]) + int(drop["hit_count"]) + 1,
        "retrieval_count": int(keep["retrieval_count"]) + int(drop["retrieval_count"]),
        "updated_at": now,
    }
    # Only columns that really change: an update of content or tags drops the stored vector.
    if tags != load_json(keep["tags"], [], field="memories.tags"):
        changes["tags"] = dump_json(tags)
    if content != keep["content"]:
        text_hash = normalised_hash(content)
        clash = memories.find_same(conn, keep["project_id"], text_hash)
        if clash is None or clash["id"] == keep["id"]:
            changes["content"] = content
            changes["content_hash"] = text_hash
            memories.drop_embedding(conn, "memory", [int(keep["id"])])
    memories.update(conn, int(keep["id"]), changes)
    keep.update(changes)
    lifecycle.archive(conn, "memory", [int(drop["id"])], now, "merged")
    relations_store.add(conn, int(keep["id"]), int(drop["id"]), "derives", "compress")
    return "tags" in changes or "content" in changes


def run(
    conn: AnyDb,
    s: Settings,
    *,
    scopes: list[int | None] | None = None,
    dry_run: bool = True,
) -> dict[str, Any]:
    """Compress every scope in `scopes` (all scopes with live memories when None)."""
    started = time.perf_counter()
    todo = lifecycle.memory_scopes(conn) if scopes is None else scopes
    merges: list[dict[str, Any]] = []
    supersessions: list[dict[str, Any]] = []
    changed: list[int] = []
    methods: set[str] = set()
    scanned = embedded = 0
    for project_id in todo:
        plan = plan_scope(conn, project_id, s, dry_run=dry_run)
        merges += plan.merges
        supersessions += plan.supersessions
        changed += plan.changed
        scanned += plan.scanned
        embedded += plan.embedded
        if plan.method != "none":
            methods.update(plan.method.split("+"))
    method = "+".join(sorted(methods)) or "none"
    note = None
    if embedded < scanned:
        note = (
            f"{scanned - embedded} of {scanned} memories have no stored embedding; they were "
            f"compared lexically (share of content words >= {s.lifecycle.compress_lexical_threshold}, "
            f"Jaccard >= {JACCARD_FLOOR})"
        )
    return {
        "dry_run": dry_run,
        "method": method,
        "threshold": s.lifecycle.compress_threshold,
        "lexical_threshold": s.lifecycle.compress_lexical_threshold,
        "note": note,
        "scanned": scanned,
        "embedded": embedded,
        "merged": len(merges),
        "superseded": len(supersessions),
        "merges": merges,
        "supersessions": supersessions,
        "changed_ids": changed,
        "took_ms": round((time.perf_counter() - started) * 1000, 1),
    }
