"""Three sessions through real hook processes against a real worker: a newer fact supersedes an older.

Session 1 concludes the shop API uses PostgreSQL 15, session 2 that it moved to PostgreSQL 16
(both through the Stop hook's last assistant message, which the worker turns into fact memories).
Session 3's start context carries 16 and not 15; the API and the timeline show the whole chain.
Also: forget over HTTP leaves nothing behind, and the decay pass archives what expired (not
what is old), restores and counts. On both backends (the home's SQLite file, a team database).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.backends import process_store, value
from tests.e2e.hook_runner import base, hook_env, run_hook, tool_payload, wait_for
from tests.e2e.worker_process import WorkerProcess
from tests.vector_margins import (
    OLD_FACT,
    OTHER_FACT,
    PARAPHRASED_UPDATE,
    UNRELATED_FACT,
    assert_clear_of,
)
from worker.settings import load_settings

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

# Where a forgotten memory could linger: its row, its vector, its keyword index entries (SQLite's
# search_index and FTS table; PostgreSQL's is the row's own search_vector column).
LEFTOVERS = {
    "sqlite": (
        "SELECT COUNT(*) FROM memories WHERE id = ?",
        "SELECT COUNT(*) FROM embeddings WHERE item_kind = 'memory' AND item_id = ?",
        "SELECT COUNT(*) FROM memory_relations WHERE ? IN (from_id, to_id)",
        "SELECT COUNT(*) FROM search_index WHERE kind = 'memory' AND item_id = ?",
        "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'zebracorn' AND ? > 0",
    ),
    "postgres": (
        "SELECT COUNT(*) FROM memories WHERE id = ?",
        "SELECT COUNT(*) FROM embeddings WHERE item_kind = 'memory' AND item_id = ?",
        "SELECT COUNT(*) FROM memory_relations WHERE ? IN (from_id, to_id)",
        "SELECT COUNT(*) FROM memories WHERE search_vector @@ plainto_tsquery('english', "
        "'zebracorn') AND ? > 0",
    ),
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "shop-api"
    (root / ".git").mkdir(parents=True)
    (root / ".transcript.jsonl").write_text('{"type":"user"}\n')
    return root


def get(worker: WorkerProcess, path: str, **params: Any) -> Any:
    query = ("?" + urllib.parse.urlencode(params)) if params else ""
    status, body = worker.request("GET", path + query)
    assert status == 200, body
    return body


def session(worker: WorkerProcess, repo: Path, sid: str, version: int) -> None:
    env = hook_env(worker.home, CAIRN_PORT=str(worker.port))
    steps: list[tuple[str, dict[str, Any]]] = [
        ("SessionStart", {**base(sid, repo, "SessionStart"), "source": "startup"}),
        (
            "UserPromptSubmit",
            {**base(sid, repo, "UserPromptSubmit"), "prompt": "Set up the database server"},
        ),
        (
            "PostToolUse",
            tool_payload(
                sid,
                repo,
                "Edit",
                {
                    "file_path": f"{repo}/docker-compose.yml",
                    "old_string": "image: postgres",
                    "new_string": f"image: postgres:{version}",
                },
                {"filePath": f"{repo}/docker-compose.yml"},
                f"toolu_{sid}",
            ),
        ),
        (
            "Stop",
            {
                **base(sid, repo, "Stop"),
                "stop_hook_active": False,
                "last_assistant_message": "The compose file is updated.\n\n## Findings\n"
                f"- The shop API uses PostgreSQL {version} for the database server.\n",
            },
        ),
        ("SessionEnd", {**base(sid, repo, "SessionEnd"), "reason": "logout"}),
    ]
    for event, payload in steps:
        result = run_hook(event, payload, env, cwd=repo)
        assert result.returncode == 0, result.stderr


def test_newer_fact_supersedes_older_across_three_sessions(
    worker: WorkerProcess, repo: Path
) -> None:
    project = str(repo)
    session(worker, repo, "sess-one", 15)
    session(worker, repo, "sess-two", 16)

    facts = get(worker, "/api/memories", project=project, kind="fact")["items"]
    by_version = {m["content"]: m for m in facts if "PostgreSQL" in m["content"]}
    old = next(m for c, m in by_version.items() if "15" in c)
    new = next(m for c, m in by_version.items() if "16" in c)
    assert old["superseded_by"] == new["id"] and old["is_latest"] is False
    assert new["is_latest"] is True and old["archived"] is False  # history is kept
    chain = get(worker, f"/api/memories/{old['id']}/relations")
    assert [m["id"] for m in chain["chain"]] == [old["id"], new["id"]]
    assert chain["latest_id"] == new["id"]
    latest = get(worker, "/api/memories", project=project, latest_only="true")["items"]
    assert old["id"] not in {m["id"] for m in latest}

    # The timeline shows both memories.
    timeline = get(worker, "/api/timeline", project=project, before=50)
    shown = {(e["kind"], e["id"]) for e in timeline["before"]}
    assert {("memory", old["id"]), ("memory", new["id"])} <= shown

    # Session 3 starts with 16, never 15.
    env = hook_env(worker.home, CAIRN_PORT=str(worker.port))
    start = run_hook(
        "SessionStart", {**base("sess-three", repo, "SessionStart"), "source": "startup"}, env, repo
    )
    assert start.returncode == 0, start.stderr
    out = start.context()
    assert out is not None
    text = out["hookSpecificOutput"]["additionalContext"]
    assert "PostgreSQL 16" in text
    assert "PostgreSQL 15" not in text
    # Searching memories finds the current fact only.
    hits = get(worker, "/api/search", q="PostgreSQL database server", project=project,
               kind="memory", mode="keyword")["hits"]  # fmt: skip
    assert [h["id"] for h in hits if h["kind"] == "memory"] == [new["id"]]


def test_forget_archive_restore_and_decay_over_http(worker: WorkerProcess) -> None:
    project = "/e2e/lifecycle"
    status, m = worker.request(
        "POST",
        "/api/memories",
        {"kind": "lesson", "content": "The zebracorn cache must be warmed before load tests",
         "project": project},
    )  # fmt: skip
    assert status == 201
    status, old = worker.request(
        "POST",
        "/api/memories",
        {"kind": "note", "content": "Lunch is at noon", "project": project, "importance": 1,
         "created_at": "2020-01-01T00:00:00Z"},
    )  # fmt: skip
    assert status == 201
    status, expired = worker.request(
        "POST",
        "/api/memories",
        {"kind": "note", "content": "Deploys frozen this week", "project": project,
         "expires_at": "2020-01-08T00:00:00Z"},
    )  # fmt: skip
    assert status == 201

    status, result = worker.request("POST", "/api/decay/run", {"project": project})
    # Only the expiry archives: the memory from 2020 is old, not forgotten.
    assert status == 200 and result["memories"]["archived"] == 1
    assert result["memories"]["ids"] == [expired["id"]]
    assert get(worker, f"/api/memories/{expired['id']}")["archive_reason"] == "expired"
    assert get(worker, f"/api/memories/{old['id']}")["archived"] is False
    status, back = worker.request("POST", f"/api/memories/{expired['id']}/restore", {})
    assert status == 200 and back["archived"] is False
    status, again = worker.request("POST", "/api/decay/run", {"project": project})
    assert again["memories"]["archived"] == 0

    status, gone = worker.request("DELETE", f"/api/memories/{m['id']}")
    assert status == 200 and gone["deleted"] is True
    assert worker.request("GET", f"/api/memories/{m['id']}")[0] == 404
    hits = get(worker, "/api/search", q="zebracorn", mode="keyword")["hits"]
    assert hits == []
    worker.stop()
    with process_store(worker.env()) as store:
        assert value(store, "SELECT COUNT(*) FROM memories WHERE project_id IS NOT NULL") == 2
        for sql in LEFTOVERS[store.backend]:
            assert value(store, sql, (m["id"],)) == 0, sql


def test_cli_decay_and_compress(worker: WorkerProcess) -> None:
    project = "/e2e/cli"
    for content in (
        "Use pnpm instead of npm for installing packages",
        "Use pnpm, not npm, for installing packages. The lockfile is pnpm-lock.yaml.",
    ):
        status, _ = worker.request(
            "POST",
            "/api/memories",
            {"kind": "decision", "content": content, "project": project, "supersede": False},
        )
        assert status == 201
    env = {**worker.env(), "CAIRN_PORT": str(worker.port)}

    def cairn(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "worker", *args], env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip

    dry = cairn("compress", "--project", project, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would merge 1 near-duplicate" in dry.stdout and "lexically" in dry.stdout
    done = cairn("compress", "--project", project, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["merged"] == 1
    decay = cairn("decay", "--dry-run")
    assert decay.returncode == 0 and decay.stdout.startswith("would archive 0 of 1 memories")
    missing = cairn("decay", "--project", "/nope")
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_paraphrased_update_supersedes_with_the_real_model(tmp_path: Path, backend: str) -> None:
    """With embeddings on, an update in other words is found by its vector (the offline model;
    on a team database compared by pgvector where installed).

    Each deciding cosine is read back from the worker and must sit MARGIN from
    `supersede_cosine` (tests/vector_margins.py): int8 kernels move cosines by CPU."""
    team = {"CAIRN_DATABASE_URL": os.environ["CAIRN_DATABASE_URL"]} if backend == "postgres" else {}
    worker = WorkerProcess(home=tmp_path / "home", env_extra={"CAIRN_EMBED_ENABLED": "1", **team})
    worker.start()
    try:
        project = "/e2e/paraphrase"
        threshold = load_settings().memories.supersede_cosine

        def save(content: str) -> dict[str, Any]:
            status, body = worker.request(
                "POST", "/api/memories", {"kind": "fact", "content": content, "project": project}
            )
            assert status == 201, body
            return dict(body)

        def embedded() -> bool:
            stats = get(worker, "/api/embeddings/stats")
            return bool(stats["status"] == "ready" and stats["coverage"] == 1.0)

        def cosines(content: str) -> dict[int, float]:
            """What supersession will compare `content` with: the memories' indexed vectors."""
            params = {"q": content, "project": project, "kind": "memory", "mode": "semantic"}
            found = get(worker, "/api/search", **params, explain="true")
            # A refused search (no cosine >= refusal_min_cosine) is far below the threshold.
            return {h["id"]: h["match"]["cosine"] for h in found["hits"]}

        old = save(OLD_FACT)
        other = save(OTHER_FACT)
        wait_for(embedded, timeout=240)  # the first test to run may build the int8 model
        seen = cosines(PARAPHRASED_UPDATE)
        assert_clear_of(seen[old["id"]], threshold, True, "the update vs the old fact")
        assert_clear_of(seen.get(other["id"], 0.0), threshold, False, "the update vs staging")
        new = save(PARAPHRASED_UPDATE)
        assert new["supersedes"] == [old["id"]]
        assert get(worker, f"/api/memories/{old['id']}")["superseded_by"] == new["id"]
        wait_for(embedded)
        # Close in topic, but another subject (production, not staging): left alone.
        seen = cosines(UNRELATED_FACT)
        for memory in (other, new):
            assert_clear_of(seen.get(memory["id"], 0.0), threshold, False, "production vs it")
        unrelated = save(UNRELATED_FACT)
        assert unrelated["supersedes"] == []
        assert get(worker, f"/api/memories/{other['id']}")["is_latest"] is True
    finally:
        worker.stop()
