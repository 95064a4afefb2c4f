"""The dashboard's progress line while the worker embeds an import's items: shown on the stats
and feed pages from the first imported batch, gone once every item has its vector (the real app
and embedding service; the fake embedder held mid-batch so the test sees the line)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

from tests.conftest import BASE_URL
from worker.app import create_app
from worker.ops.status import duration_text, progress_text
from worker.retrieval import service as service_module
from worker.retrieval.embedder import FakeEmbedder
from worker.settings import load_settings

pytestmark = pytest.mark.both_backends

HTML = {"accept": "text/html"}


class HeldEmbedder(FakeEmbedder):
    """Blocks inside embed() while `hold` is set."""

    def __init__(self, dimensions: int) -> None:
        super().__init__(dimensions)
        self.hold = threading.Event()
        self.release = threading.Event()
        self.entered = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.hold.is_set():
            self.entered.set()
            assert self.release.wait(20)
        return super().embed(texts)


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> HeldEmbedder:
    model = HeldEmbedder(64)
    monkeypatch.setattr(service_module, "load_embedder", lambda *args, **kwargs: model)
    return model


@pytest.fixture
def browser(embedder: HeldEmbedder, backend: str) -> Iterator[TestClient]:
    """The dashboard with a held embedder, over the test's backend."""
    settings = load_settings(embed_enabled=True, embed_model="fake-hash-64")
    app = create_app(settings)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        token = settings.token_path.read_text().strip()
        client.headers["Authorization"] = f"Bearer {token}"
        embeddings = client.app_state["cairn"].embeddings
        assert embeddings.wait_idle(20)  # model loaded, empty table swept
        yield client
        embedder.release.set()


def import_batch(client: TestClient, first: int, count: int) -> None:
    """What `cairn import claude-code` sends: hook requests through POST /api/spool/events."""
    events: list[dict[str, Any]] = [
        {
            "method": "POST",
            "path": "/api/sessions",
            "body": {"session_id": "imp-1", "project": "/p/app", "event_id": "imp-1:start"},
        }
    ]
    for i in range(first, first + count):
        body = {
            "project": "/p/app",
            "session_id": "imp-1",
            "type": "command",
            "title": f"Run: pytest tests/test_mod{i}.py",
            "event_id": f"imp-1:obs:{i}",
        }
        events.append({"method": "POST", "path": "/api/observations", "body": body})
    response = client.post("/api/spool/events", json={"events": events})
    assert response.status_code == 200, response.text
    assert response.json()["stored"] >= count


def line_of(client: TestClient, path: str) -> str | None:
    page = client.get(path, headers=HTML).text
    start = page.find('id="import-progress"')
    assert start != -1, "every such page carries the (maybe hidden) line"
    tag = page[page.rfind("<p", 0, start) : page.find("</p>", start)]
    if " hidden " in tag.split(">")[0] + " ":
        return None
    return " ".join(tag.split("<span>", 1)[1].split("</span>")[0].split())


def wait_for(predicate: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_the_line_shows_while_an_import_is_embedded_and_goes_when_done(
    browser: TestClient, embedder: HeldEmbedder
) -> None:
    assert line_of(browser, "/stats") is None  # nothing imported: no line
    embedder.hold.set()
    import_batch(browser, 0, 12)
    assert embedder.entered.wait(20)
    expected = "embedding 0 of 12 imported items; keyword search works meanwhile"
    assert line_of(browser, "/stats") == expected
    assert line_of(browser, "/") == expected  # the feed too
    fragment = browser.get("/stats/import-progress", headers={**HTML, "HX-Request": "true"})
    assert '<progress max="12" value="0">' in fragment.text
    api = browser.get("/api/embeddings/stats").json()["import"]
    assert (api["embedded"], api["items"], api["left"]) == (0, 12, 12)
    # Keyword search works while the vectors are waiting.
    hits = browser.get("/api/search", params={"q": "test_mod7", "mode": "keyword"}).json()["hits"]
    assert hits and "test_mod7" in hits[0]["title"]

    embedder.hold.clear()
    embedder.release.set()
    assert browser.app_state["cairn"].embeddings.wait_idle(20)
    assert line_of(browser, "/stats") is None
    assert line_of(browser, "/") is None
    assert browser.get("/api/embeddings/stats").json()["import"] is None


def test_a_later_import_counts_only_its_own_items_with_time_left(
    browser: TestClient, embedder: HeldEmbedder
) -> None:
    import_batch(browser, 0, 5)
    assert browser.app_state["cairn"].embeddings.wait_idle(20)
    assert line_of(browser, "/stats") is None  # done: the mark is cleared
    embedder.release.clear()
    embedder.entered.clear()
    embedder.hold.set()
    import_batch(browser, 5, 8)
    assert embedder.entered.wait(20)
    text = line_of(browser, "/stats")
    assert text is not None and text.startswith("embedding 0 of 8 imported items, ~")
    assert text.endswith(" left")  # the rate is known from the first import's batches


def test_no_line_when_embedding_is_off(client: TestClient) -> None:
    import_batch(client, 0, 3)
    assert line_of(client, "/stats") is None
    assert client.get("/api/embeddings/stats").json()["import"] is None


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ((3120, 9800, "ready", 55.0, None), "embedding 3,120 of 9,800 imported items, ~2 min left"),
        ((0, 40, "ready", 4.0, None), "embedding 0 of 40 imported items, ~10 s left"),
        (
            (0, 500_000, "ready", 50.0, None),
            "embedding 0 of 500,000 imported items, ~2 h 47 min left",
        ),
        (
            (0, 9800, "loading", None, None),
            "embedding 0 of 9,800 imported items: the model is loading; keyword search works meanwhile",
        ),
        (
            (10, 20, "unavailable", None, "no model file"),
            "embedding 10 of 20 imported items: the model is unavailable (no model file); "
            "keyword search works",
        ),
    ],
)
@pytest.mark.sqlite_only("no database: progress_text() over given counts")
def test_progress_text(args: tuple[Any, ...], text: str) -> None:
    assert progress_text(*args) == text


@pytest.mark.sqlite_only("no database: duration_text() over seconds")
def test_duration_text_rounds_to_what_a_reader_needs() -> None:
    assert [duration_text(s) for s in (0.2, 59, 89, 120, 5399, 5400, 7260)] == [
        "~1 s",
        "~59 s",
        "~89 s",
        "~2 min",
        "~90 min",
        "~1 h 30 min",
        "~2 h 01 min",
    ]
