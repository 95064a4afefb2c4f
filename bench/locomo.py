"""LoCoMo retrieval benchmark: recall@1/5/10, Hit@5, MRR per category, and the refusal test.

Each conversation becomes its own project: one memory per turn (`speaker: text`, created_at
from the session date, the turn's dia_id in meta), saved through the same store path as
POST /api/memories and embedded by the worker's background embedder. Every question is asked in
`keyword`, `semantic` and `hybrid` mode through the retrieval code the API uses (ranking
measured without the refusal rule and without counting retrievals, so questions do not
influence each other). Then the refusal test: each conversation's questions (categories 1-4)
asked of the next conversation's project (foreign) and of its own (native).

    python bench/locomo.py --data ../shared/data/locomo-dev.json --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import print_table, write_result
from worker.memory.merge import save
from worker.retrieval.keyword_index import KeywordIndex
from worker.retrieval.search import MODES, SearchRequest, search
from worker.retrieval.service import EmbeddingService
from worker.settings import Settings, load_settings
from worker.store import Store

AIMS = {"recall@5": 60.0, "recall@10": 70.0, "mrr": 0.50}


def aim_row(name: str, value: float, op: str, target: float) -> tuple[str, float, str, bool]:
    met = {">=": value >= target, "<=": value <= target, "<": value < target}[op]
    shown = round(value, 3 if abs(value) < 1 else 1)
    return name, shown, f"{op} {round(target, 3 if abs(target) < 1 else 1)}", met


def session_time(text: str) -> str:
    """'1:56 pm on 8 May, 2023' -> ISO 8601 (UTC)."""
    parsed = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return parsed.replace(tzinfo=UTC).isoformat()


def turns(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    n = 1
    while f"session_{n}" in conversation or f"session_{n}_date_time" in conversation:
        when = conversation.get(f"session_{n}_date_time")
        for turn in conversation.get(f"session_{n}") or []:
            out.append(
                {
                    "content": f"{turn['speaker']}: {turn['text']}",
                    "created_at": session_time(when) if when else None,
                    "dia_id": turn["dia_id"],
                }
            )
        n += 1
    return out


def ingest(store: Store, settings: Settings, project: str, conversation: dict[str, Any]) -> int:
    items = turns(conversation)

    def write(conn: Any) -> None:
        for turn in items:
            created = turn["created_at"]
            save(
                conn,
                {
                    "kind": "fact",
                    "content": turn["content"],
                    "project": project,
                    "scope": "project",
                    "created_at_ms": int(datetime.fromisoformat(created).timestamp() * 1000)
                    if created
                    else None,
                    "meta": {"dia_id": turn["dia_id"]},
                },
                settings,
            )

    store.write_sync(write)
    return len(items)


def metrics(ranked: list[str], evidence: list[str]) -> dict[str, float]:
    wanted = set(evidence)
    out: dict[str, float] = {}
    for k in (1, 5, 10):
        out[f"recall@{k}"] = len(wanted & set(ranked[:k])) / len(wanted)
    out["hit@5"] = 1.0 if wanted & set(ranked[:5]) else 0.0
    first = next((i for i, d in enumerate(ranked) if d in wanted), None)
    out["mrr"] = 1.0 / (first + 1) if first is not None else 0.0
    return out


def average(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    keys = rows[0].keys()
    out = {k: sum(r[k] for r in rows) / len(rows) for k in keys}
    for k in out:
        if k != "mrr":
            out[k] *= 100
    out["questions"] = len(rows)
    return out


async def ask(
    store: Store,
    settings: Settings,
    service: EmbeddingService,
    keywords: KeywordIndex,
    project: str,
    question: str,
    mode: str,
    refusal: bool,
) -> tuple[list[str], bool]:
    outcome = await search(
        store,
        settings,
        service,
        SearchRequest(
            query=question,
            project=project,
            kinds=["memory"],
            mode=mode,  # type: ignore[arg-type]
            limit=10,
            apply_refusal=refusal,
        ),
        keywords=keywords,
    )
    dia = [str((outcome.items[c.ref].get("meta") or {}).get("dia_id")) for c in outcome.hits]
    return dia, outcome.refused


def refusal_test(
    data: list[dict[str, Any]],
    projects: list[str],
    store: Store,
    settings: Settings,
    service: EmbeddingService,
    keywords: KeywordIndex,
    mode: str,
) -> dict[str, Any]:
    """Each conversation's questions (categories 1-4) asked of the next conversation's project
    (foreign: should be refused) and of its own (native: should not), with the refusal rule on.
    Also the rates per conversation, so a rule that only fits some conversations shows."""
    totals = {"foreign": 0, "foreign_refused": 0, "native": 0, "native_refused": 0}
    per_conversation: list[dict[str, float]] = []
    for i, conv in enumerate(data):
        other = projects[(i + 1) % len(data)]
        counts = dict.fromkeys(totals, 0)
        for qa in conv["qa"]:
            if int(qa["category"]) not in (1, 2, 3, 4) or not qa.get("evidence"):
                continue
            question = str(qa["question"])
            for side, project in (("foreign", other), ("native", projects[i])):
                _, refused = anyio.run(
                    ask, store, settings, service, keywords, project, question, mode, True
                )
                counts[side] += 1
                counts[f"{side}_refused"] += int(refused)
        for key, value in counts.items():
            totals[key] += value
        per_conversation.append(rates(counts))
    return {**rates(totals), **totals, "per_conversation": per_conversation}


def rates(counts: dict[str, int]) -> dict[str, float]:
    return {
        "foreign_refused_pct": 100 * counts["foreign_refused"] / max(1, counts["foreign"]),
        "native_refused_pct": 100 * counts["native_refused"] / max(1, counts["native"]),
    }


def run(
    data: list[dict[str, Any]],
    settings: Settings,
    store: Store,
    service: EmbeddingService,
    keywords: KeywordIndex,
    modes: tuple[str, ...] = MODES,
) -> dict[str, Any]:
    projects = [f"locomo/{conv.get('sample_id', i)}" for i, conv in enumerate(data)]
    started = time.perf_counter()
    total = sum(
        ingest(store, settings, projects[i], conv["conversation"]) for i, conv in enumerate(data)
    )
    if settings.embedding.enabled:
        service.request_sweep()
        if not service.wait_idle(1800):
            raise SystemExit(f"embeddings not ready: {service.status()}")
    ingest_s = time.perf_counter() - started
    print(f"ingested and embedded {total} turns in {ingest_s:.1f}s ({service.status()['model']})")

    per_mode: dict[str, dict[str, Any]] = {}
    for mode in modes:
        by_cat: dict[str, list[dict[str, float]]] = {}
        for i, conv in enumerate(data):
            for qa in conv["qa"]:
                evidence = [e for e in qa.get("evidence") or [] if e]
                if not evidence:
                    continue
                ranked, _ = anyio.run(
                    ask,
                    store,
                    settings,
                    service,
                    keywords,
                    projects[i],
                    str(qa["question"]),
                    mode,
                    False,
                )
                row = metrics(ranked, evidence)
                by_cat.setdefault(str(qa["category"]), []).append(row)
                if int(qa["category"]) in (1, 2, 3, 4):
                    by_cat.setdefault("1-4", []).append(row)
        per_mode[mode] = {cat: average(rows) for cat, rows in sorted(by_cat.items())}

    refusal = {
        mode: refusal_test(data, projects, store, settings, service, keywords, mode)
        for mode in ("hybrid", "keyword")
        if mode in modes
    }
    return {
        "turns": total,
        "ingest_seconds": round(ingest_s, 1),
        "modes": per_mode,
        "refusal": refusal,
    }


def spread(ref: dict[str, Any], key: str) -> str:
    """The lowest and highest per-conversation rate."""
    values = [c[key] for c in ref["per_conversation"]]
    return f"{min(values):.1f}-{max(values):.1f}"


def checks(result: dict[str, Any]) -> list[tuple[str, Any, str, bool | None]]:
    modes, refusal = result["modes"], result["refusal"]
    rows: list[tuple[str, Any, str, bool | None]] = []
    if "hybrid" in modes:
        hybrid = modes["hybrid"]["1-4"]
        ref = refusal["hybrid"]
        rows += [
            aim_row("hybrid recall@5 (cat 1-4)", hybrid["recall@5"], ">=", 60.0),
            aim_row("hybrid recall@10 (cat 1-4)", hybrid["recall@10"], ">=", 70.0),
            aim_row("hybrid MRR (cat 1-4)", hybrid["mrr"], ">=", 0.50),
            aim_row(
                "keyword recall@5 (cat 1-4)",
                modes["keyword"]["1-4"]["recall@5"],
                "<",
                hybrid["recall@5"],
            ),
            aim_row(
                "semantic recall@5 (cat 1-4)",
                modes["semantic"]["1-4"]["recall@5"],
                "<",
                hybrid["recall@5"],
            ),
            aim_row("foreign questions refused %", ref["foreign_refused_pct"], ">=", 90.0),
            aim_row("native questions refused %", ref["native_refused_pct"], "<=", 2.0),
        ]
    else:
        keyword = modes["keyword"]["1-4"]
        rows += [
            aim_row("keyword recall@5 (cat 1-4)", keyword["recall@5"], ">=", 0.0),
            aim_row("keyword MRR (cat 1-4)", keyword["mrr"], ">=", 0.0),
        ]
    # Keyword-only mode (the model loading or unavailable), issue 19 item 3.
    ref = refusal["keyword"]
    rows += [
        aim_row("keyword-only: foreign refused %", ref["foreign_refused_pct"], ">=", 80.0),
        aim_row("keyword-only: native refused %", ref["native_refused_pct"], "<=", 5.0),
        (
            "keyword-only: foreign refused % per conversation",
            spread(ref, "foreign_refused_pct"),
            "",
            None,
        ),
        (
            "keyword-only: native refused % per conversation",
            spread(ref, "native_refused_pct"),
            "",
            None,
        ),
    ]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_data = Path(__file__).resolve().parent.parent.parent / "shared/data/locomo-dev.json"
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("CAIRN_LOCOMO_DATA", default_data)),
        help="LoCoMo JSON (default: $CAIRN_LOCOMO_DATA or ../shared/data/locomo-dev.json)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--keyword-only",
        action="store_true",
        help="no embedding model (CAIRN_EMBED_ENABLED=0): keyword ranking and refusal only",
    )
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"locomo: no data at {args.data} (pass --data FILE)", file=sys.stderr)
        return 2
    data = json.loads(args.data.read_text())
    with tempfile.TemporaryDirectory(prefix="cairn-locomo-") as tmp:
        settings = load_settings(home=Path(tmp), embed_enabled=not args.keyword_only)
        store = Store(settings.db_path, busy_timeout_ms=settings.database.busy_timeout_ms)
        store.open()
        keywords = KeywordIndex()  # loaded as the worker does at start; it then follows writes
        store.read_sync(keywords.load)
        service = EmbeddingService(settings, store)
        service.start()
        try:
            modes = ("keyword",) if args.keyword_only else MODES
            result = run(data, settings, store, service, keywords, modes)
        finally:
            anyio.run(service.stop)
            store.close()
    for mode, cats in result["modes"].items():
        print(f"\n{mode}")
        print(f"{'category':>9} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'Hit@5':>6} {'MRR':>6}")
        for cat, m in cats.items():
            print(
                f"{cat:>9} {m['questions']:>5} {m['recall@1']:6.1f} {m['recall@5']:6.1f} "
                f"{m['recall@10']:6.1f} {m['hit@5']:6.1f} {m['mrr']:6.3f}"
            )
    rows = checks(result)
    print_table("LoCoMo (dev)", rows)
    result["figures"] = [
        {"figure": name, "value": value, "aim": aim, "met": met} for name, value, aim, met in rows
    ]
    write_result("locomo_keyword" if args.keyword_only else "locomo", result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
