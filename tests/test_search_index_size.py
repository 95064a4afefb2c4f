"""index_size reads FTS5's stored row count; it must always equal COUNT(*)."""

from __future__ import annotations

from starlette.testclient import TestClient

from worker.settings import Settings
from worker.store import Store
from worker.store import search as q


def _both(settings: Settings) -> tuple[int, int]:
    store = Store(settings.db_path)
    store.open()
    try:
        return store.read_sync(
            lambda c: (
                q.index_size(c),
                int(c.execute("SELECT COUNT(*) FROM search_index").fetchone()[0]),
            )
        )
    finally:
        store.close()


def test_index_size_matches_count_through_inserts_and_deletes(
    client: TestClient, settings: Settings
) -> None:
    assert _both(settings) == (0, 0)
    ids = []
    for i in range(300):  # past one byte of varint (127) and into two
        r = client.post(
            "/api/observations", json={"project": "/p", "type": "note", "title": f"note {i}"}
        )
        ids.append(r.json()["id"])
    assert _both(settings) == (300, 300)
    for oid in ids[:50]:
        assert client.delete(f"/api/observations/{oid}").status_code in (200, 204)
    assert _both(settings) == (250, 250)
