"""worker/store/search.py on both backends: the indexed terms of hits, counted retrievals and the
file writes that make an observation stale."""

from __future__ import annotations

from typing import Any

from worker.store import Store, memories, observations, projects, search, sessions
from worker.store.pg import PgStore
from worker.terms import index_text, new_terms

T0 = 1_700_000_000_000


def _write(store: Store | PgStore) -> None:
    def write(c: Any) -> None:
        for i, files in enumerate((["src/app.py"], ["src/app.py", "src/db.py"], ["README.md"])):
            observations.insert(
                c,
                {
                    "project": "/repo",
                    "type": "file_write",
                    "title": "Edit getUserById",
                    "body": "le funzioni di caching",
                    "files": files,
                    "created_at_ms": T0 + i * 1000,
                },
            )
        memories.insert(
            c,
            {"kind": "fact", "content": "the OrderService retries", "project": "/repo",
             "tags": ["billing", "retries"]},
        )  # fmt: skip

    store.write_sync(write)


def test_indexed_terms_are_the_analysed_text_on_each_backend(
    backend_store: Store | PgStore,
) -> None:
    _write(backend_store)
    refs = [("observation", 1), ("memory", 1), ("observation", 99)]
    terms = backend_store.read_sync(lambda c: search.indexed_terms(c, refs))
    files = '["src/app.py"]'
    assert terms == {
        ("observation", 1): f"{index_text('Edit getUserById')} "
        f"{index_text('le funzioni di caching', files)}",
        ("memory", 1): " "
        + index_text("the OrderService retries")
        + " "
        + " ".join(new_terms('["billing", "retries"]', "the OrderService retries")),
    }
    assert "getuserbyid" in terms[("observation", 1)].split()
    assert "billing" in terms[("memory", 1)].split()


def test_later_file_writes_and_counted_retrievals_on_each_backend(
    backend_store: Store | PgStore,
) -> None:
    store = backend_store
    _write(store)
    pid = store.read_sync(lambda c: c.execute("SELECT id FROM projects").fetchone()[0])
    files = ["src/app.py", "src/db.py", "nowhere.py"]
    later = store.read_sync(lambda c: search.later_file_writes(c, pid, files, T0 + 500))
    assert later == {"src/app.py": T0 + 1000, "src/db.py": T0 + 1000}
    assert store.read_sync(lambda c: search.later_file_writes(c, pid, files, T0 + 1000)) == {}

    refs = (ref for ref in [("observation", 2), ("memory", 1), ("prompt", 5)])  # one pass
    store.write_sync(lambda c: search.count_retrievals(c, refs, T0 + 9))
    counts = store.read_sync(
        lambda c: [
            tuple(
                c.execute(
                    f"SELECT id, retrieval_count, last_retrieved_at FROM {t} ORDER BY id"
                ).fetchall()
            )
            for t in ("observations", "memories")
        ]
    )
    assert [[tuple(r) for r in rows] for rows in counts] == [
        [(1, 0, None), (2, 1, T0 + 9), (3, 0, None)],
        [(1, 1, T0 + 9)],
    ]


def test_a_sessions_work_counts_its_tool_observations_not_its_answers(
    backend_store: Store | PgStore,
) -> None:
    def write(c: Any) -> None:
        for session, kinds in (("worked", ("command", "answer")), ("asked", ("answer",))):
            for i, kind in enumerate(kinds):
                observations.insert(
                    c,
                    {
                        "project": "/repo",
                        "session_id": session,
                        "type": kind,
                        "title": f"{kind} {i}",
                        "body": "",
                        "files": [],
                        "created_at_ms": T0 + i,
                    },
                )

    backend_store.write_sync(write)
    counts = backend_store.read_sync(
        lambda c: search.session_activity(c, ["worked", "asked", "none"])
    )
    # A question answered from general knowledge did no work: its prompt stays an idle one.
    assert counts == {"worked": 1}


def test_a_sessions_items_within_a_span_and_visible_to_the_reader(
    backend_store: Store | PgStore,
) -> None:
    """The thread features' session-mates: the session's observations, prompts and memories of
    the project written within the span; a reader sees only their own or shared prompts and
    observations, as search does."""

    def write(c: Any) -> dict[str, Any]:
        pid = projects.ensure(c, "/repo")
        other = projects.ensure(c, "/other")
        ids: dict[str, Any] = {}
        for name, session, at, author in (
            ("mine", "s1", T0, "ana@example.com"),
            ("theirs", "s1", T0 + 1000, "bo@example.com"),
            ("late", "s1", T0 + 10_000, "ana@example.com"),
            ("elsewhere", "s2", T0, "ana@example.com"),
        ):
            row, _ = observations.insert(
                c,
                {
                    "project": "/repo",
                    "session_id": session,
                    "type": "command",
                    "title": name,
                    "body": "",
                    "files": [],
                    "created_at_ms": at,
                    "author": author,
                },
            )
            ids[name] = row["id"]
        sessions.ensure(c, "s1", pid)
        ids["prompt"] = sessions.add_prompt(c, "s1", pid, "fix it", T0 + 500, author="bo@example.com", shared=True)["id"]  # fmt: skip
        ids["other_project"] = sessions.add_prompt(c, "s1", other, "elsewhere", T0 + 500)["id"]
        kept, _ = memories.insert(
            c,
            {"kind": "fact", "content": "the relay is on GPIO 5", "project": "/repo",
             "session_id": "s1", "created_at_ms": T0 + 2000},
        )  # fmt: skip
        ids["memory"] = kept["id"]
        ids["pid"] = pid
        return ids

    ids = backend_store.write_sync(write)

    def read(reader: str | None) -> list[Any]:
        return backend_store.read_sync(
            lambda c: search.session_items(c, ids["pid"], ["s1", ""], (T0, T0 + 5000), reader)
        )

    everyone = read(None)
    assert sorted(ref for ref, _, _ in everyone) == sorted(
        [
            ("observation", ids["mine"]),
            ("observation", ids["theirs"]),
            ("prompt", ids["prompt"]),
            ("memory", ids["memory"]),
        ]
    )
    assert all(sid == "s1" and T0 <= at <= T0 + 5000 for _, sid, at in everyone)
    # Bo's command is private to Bo; his prompt was shared; memories are not private.
    assert ("observation", ids["theirs"]) not in [ref for ref, _, _ in read("ana@example.com")]
    assert ("prompt", ids["prompt"]) in [ref for ref, _, _ in read("ana@example.com")]
    assert backend_store.read_sync(lambda c: search.session_items(c, ids["pid"], [], (0, T0))) == []
