"""The background embedder: loads the model after the worker is up, keeps every item embedded.

One daemon thread: load the model (slow, so never before /health answers), load stored vectors
of that model into the in-memory index, then embed whatever has no vector yet, in batches: new
items announced through `Cairn.item_listeners` first, and a sweep of the table for anything else
(items edited or written by other paths, a model change). A model that cannot load leaves search
keyword-only with the reason in `status()`; nothing crashes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import numpy as np
import numpy.typing as npt

from worker.heap import release_freed_memory
from worker.priority import lower_this_thread
from worker.retrieval.clauses import CACHE_ENTRIES, ClauseCosines
from worker.retrieval.context_lines import failure_excerpt
from worker.retrieval.db_vectors import DatabaseVectors
from worker.retrieval.embedder import Embedder, EmbedderUnavailable, load_embedder
from worker.retrieval.vectors import Ref, VectorIndex
from worker.settings import Settings
from worker.store import items as item_rows
from worker.store import vectors as vector_q
from worker.store.backend import Backend
from worker.store.vectors import from_blob, to_blob

log = logging.getLogger(__name__)

SWEEP_SECONDS = 30.0
# Stored memories whose clause vectors are warmed per idle step after a start.
WARM_BATCH = 32


def embedding_text(item: dict[str, Any], max_chars: int) -> str:
    """What an item's vector stands for: its title, then its body (and files for observations).

    A failed command's vector stands for what failed first: its output opens with a banner and
    the command's progress, and the error a reader asks about by its symptom comes last, past
    the words the model reads."""
    kind = item["kind"]
    if kind == "observation":
        body = str(item.get("body") or "")
        failed = item.get("type") == "command" and "(exit " in str(item["title"])
        excerpt = failure_excerpt(body) if failed else ""
        parts = [item["title"], f"failed: {excerpt}" if excerpt else "", body]
        # A file the title already names ("Edit src/app.py") would only be said twice.
        files = [f for f in (item.get("files") or [])[:10] if f not in item["title"]]
        if files:
            parts.append("files: " + ", ".join(files))
    elif kind == "summary":
        parts = [item["title"], item.get("body") or ""]
    else:
        parts = [item.get("body") or item["title"]]
    text = "\n".join(p for p in parts if p).strip()
    return text[:max_chars]


def memory_text(item: dict[str, Any]) -> str:
    """The text a memory's clauses are cut from (the key of retrieval/clauses.py's cache)."""
    return str(item.get("body") or item.get("title") or "")


def context_vector(
    plain: dict[Ref, npt.NDArray[np.float32]], ref: Ref, previous: Ref | None, weight: float
) -> npt.NDArray[np.float32]:
    """What an item's vector stands for: the item, plus a share of the item before it in its
    thread (a reply means little without what it answers). L2-normalised."""
    vector = plain[ref]
    if previous is None or previous not in plain or weight <= 0:
        return vector
    mixed = vector + weight * plain[previous]
    norm = float(np.linalg.norm(mixed))
    result: npt.NDArray[np.float32] = (mixed / norm).astype(np.float32) if norm > 0 else vector
    return result


class EmbeddingService:
    def __init__(
        self,
        settings: Settings,
        store: Backend,
        factory: Callable[[], Embedder] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self._factory = factory or (
            lambda: load_embedder(
                settings.embedding.model,
                settings.embedding.model_path,
                settings.models_path,
                settings.embedding.batch,
                settings.embedding.max_tokens,
                settings.embedding.quantize,
            )
        )
        self.embedder: Embedder | None = None
        # The in-memory matrix, or on a team database with pgvector the database's index.
        self.index: VectorIndex | DatabaseVectors | None = None
        self.clauses = ClauseCosines()
        # The stored memories whose clauses are still to warm: below this id (None: done).
        self._warm_after: int | None = 2**62
        self._warm_left = CACHE_ENTRIES
        self._state = "disabled" if not settings.embedding.enabled else "starting"
        self._error: str | None = None
        self._queue: deque[Ref] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._embedded = 0
        self._busy_seconds = 0.0
        self._sweep_due = 0.0
        self._sweep_after: dict[str, int] = {}
        # Held while a batch's vectors go into the table and the index, and while a reindex
        # empties both: the two never diverge (a batch embedded across a reindex lands in
        # the new index along with its rows, or is cleared with them).
        self._save_lock = threading.Lock()
        # The vector change log's last entry applied (None: the store keeps none, see follow).
        self._vector_seq: int | None = None
        self._follow_lock = threading.Lock()

    # ------------------------------------------------------------------ public
    @property
    def ready(self) -> bool:
        return self.embedder is not None and self.index is not None

    def start(self) -> None:
        if not self.settings.embedding.enabled or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="cairn-embedder", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            await anyio.to_thread.run_sync(thread.join, 10.0)

    def enqueue(self, kind: str, ids: list[int]) -> None:
        """Item listener: new items get embedded soon (bounded queue; the sweep catches up)."""
        if self._state == "disabled":
            return
        room = self.settings.embedding.queue_max - len(self._queue)
        self._queue.extend((kind, i) for i in ids[: max(0, room)])
        if len(ids) > room:
            self._sweep_due = 0.0
        self._wake.set()

    def reindex(self) -> int:
        """Forget every stored vector and start from an empty index, then sweep at once.

        Returns how many vectors were deleted. Blocking: call it from a thread."""
        with self._save_lock:
            removed = self.store.write_sync(vector_q.clear)
            if self.embedder is not None:
                self.index = self._new_index(self.embedder)
            self._queue.clear()
            self._sweep_after = {}
        self.request_sweep()
        return removed

    @property
    def in_database(self) -> bool:
        """Vectors are searched by the database (pgvector), none held by this worker."""
        return bool(getattr(self.store, "native_vectors", False))

    def _new_index(self, embedder: Embedder) -> VectorIndex | DatabaseVectors:
        if self.in_database:
            return DatabaseVectors(self.store, embedder.model_id, embedder.dimensions)
        return VectorIndex(embedder.dimensions)

    @property
    def state(self) -> str:
        """The status word alone (status() also counts the vectors: a query on a team database)."""
        return self._state

    def request_sweep(self) -> None:
        self._sweep_due = 0.0
        self._wake.set()

    def status(self) -> dict[str, Any]:
        embedder = self.embedder
        return {
            "status": self._state,
            "error": self._error,
            "model": embedder.model_id if embedder else self.settings.embedding.model,
            "dimensions": embedder.dimensions if embedder else None,
            "indexed_vectors": len(self.index) if self.index is not None else 0,
            "queue_depth": len(self._queue),
            "embedded_since_start": self._embedded,
            "items_per_second": round(self._embedded / self._busy_seconds, 1)
            if self._busy_seconds > 0
            else None,
        }

    def embed_query(self, text: str) -> npt.NDArray[np.float32] | None:
        embedder = self.embedder
        if embedder is None:
            return None
        vectors = embedder.embed([text[: self.settings.embedding.max_chars]])
        first: npt.NDArray[np.float32] = vectors[0]
        return first

    def vector(self, ref: Ref) -> npt.NDArray[np.float32] | None:
        return self.index.vector(ref) if self.index is not None else None

    def vectors(self, refs: list[Ref]) -> dict[Ref, npt.NDArray[np.float32]]:
        """The (context) vectors of these items that have one: one query on a team database."""
        index = self.index
        if index is None:
            return {}
        if isinstance(index, DatabaseVectors):
            return index.vectors(refs)
        found = {ref: index.vector(ref) for ref in refs}
        return {ref: v for ref, v in found.items() if v is not None}

    def clause_cosines(
        self, query: npt.NDArray[np.float32], texts: dict[Ref, str]
    ) -> dict[Ref, float]:
        """Each memory's best clause cosine to the query (retrieval/clauses.py)."""
        embedder = self.embedder
        if embedder is None or not texts:
            return {}
        return self.clauses.best(embedder, query, texts)

    def plain_cosines(self, query: npt.NDArray[np.float32], refs: list[Ref]) -> dict[Ref, float]:
        """Each item's own vector's cosine to the query (items without one are left out)."""
        embedder = self.embedder
        if embedder is None or not refs:
            return {}
        stored = self.store.read_sync(lambda c: vector_q.plain_vectors(c, embedder.model_id, refs))
        return {ref: float(from_blob(blob) @ query) for ref, blob in stored.items()}

    def follow(self) -> None:
        """Take in the vectors other workers stored, replaced or deleted since the last call
        (a team database's `vector_changes` log); nothing to do on SQLite, whose one worker
        stores every vector itself. A search calls it first, so it finds what another worker
        embedded. Each vector is mixed with its stored predecessor's, as at load."""
        embedder, index, seq = self.embedder, self.index, self._vector_seq
        if embedder is None or not isinstance(index, VectorIndex) or seq is None:
            return
        with self._follow_lock:
            seq = self._vector_seq or seq
            changed, stored, previous, before = self.store.read_sync(
                lambda c: self._changed_vectors(c, embedder.model_id, seq)
            )
            weight = self.settings.embedding.context_weight
            for ref, _seq in changed:
                if ref not in stored:
                    index.drop(ref)
                    continue
                project_id, blob = stored[ref]
                plain = {ref: from_blob(blob)}
                if plain[ref].shape[0] != embedder.dimensions:
                    index.drop(ref)
                    continue
                prev = previous.get(ref)
                if prev is not None and prev in before:
                    plain[prev] = from_blob(before[prev])
                index.put(ref, project_id, context_vector(plain, ref, prev, weight))
            if changed:
                self._vector_seq = changed[-1][1]

    def _changed_vectors(
        self, conn: Any, model: str, seq: int
    ) -> tuple[
        list[tuple[Ref, int]],
        dict[Ref, tuple[int | None, bytes]],
        dict[Ref, Ref],
        dict[Ref, bytes],
    ]:
        """(changes after `seq`, the changed items' vectors, their predecessors, and those's
        vectors): one read."""
        changed = vector_q.changes_since(conn, seq)
        refs = list(dict.fromkeys(ref for ref, _ in changed))
        stored = vector_q.stored_of(conn, model, refs) if refs else {}
        previous: dict[Ref, Ref] = {}
        before: dict[Ref, bytes] = {}
        if stored and self.settings.embedding.context_weight > 0:
            window_ms = int(self.settings.search.thread_window_minutes * 60_000)
            links = item_rows.neighbours(conn, list(stored), window_ms)
            previous = {ref: prev for ref, (prev, _) in links.items() if prev is not None}
            before = vector_q.plain_vectors(conn, model, list(set(previous.values())))
        return changed, stored, previous, before

    # ------------------------------------------------------------------ thread
    def _run(self) -> None:
        self._state = "loading"
        try:
            embedder = self._factory()
        except EmbedderUnavailable as exc:
            self._fail(str(exc))
            return
        except Exception as exc:  # a broken model file must not take the worker down
            log.exception("embedding model failed to load")
            self._fail(f"embedding model failed to load: {exc}")
            return
        index = self._new_index(embedder)
        try:
            if isinstance(index, VectorIndex):
                self._load_vectors(index, embedder)
        except Exception as exc:
            log.exception("loading stored vectors failed")
            self._fail(f"loading stored vectors failed: {exc}")
            return
        release_freed_memory()
        self.index = index
        self.embedder = embedder
        self._state = "indexing"
        # From here this thread only works in the background: it and the embedding lanes it
        # starts yield the cores to requests (priority.py). Lowered after loading, so that
        # threads a model starts at load time (fastembed's pool, which queries also use) keep
        # the normal priority; a query embeds the default model in its own thread.
        lower_this_thread()
        log.info("embedding model %s ready (%d dims)", embedder.model_id, embedder.dimensions)
        while not self._stop.is_set():
            try:
                worked = self._step(embedder)
            except Exception:
                log.exception("background embedding step failed; retrying shortly")
                worked = False
                self._stop.wait(5.0)
            if not worked:
                self._state = "ready"
                if self._warm_stored(embedder):  # idle work: not "indexing" for wait_idle
                    continue
                self._wake.wait(timeout=max(0.1, self._sweep_due - time.monotonic()))
                self._wake.clear()
            else:
                self._state = "indexing"

    def _warm_stored(self, embedder: Embedder) -> bool:
        """With nothing else to do, the clause vectors of a few stored memories (the most
        recent first, as many as the cache holds), once per start. Whether it did any."""
        if self._warm_after is None:
            return False
        after = self._warm_after
        limit = min(WARM_BATCH, self._warm_left)
        try:
            found = self.store.read_sync(lambda c: item_rows.recent_memory_texts(c, after, limit))
        except Exception:  # the database away: a prompt computes what it needs instead
            log.warning("warming memory clause vectors stopped", exc_info=True)
            self._warm_after = None
            return False
        if not found:
            self._warm_after = None
            return False
        self._warm_after = found[-1][0]
        self._warm_left -= len(found)
        if self._warm_left <= 0:
            self._warm_after = None
        self.clauses.warm(embedder, [text for _, text in found])
        return True

    def _fail(self, message: str) -> None:
        log.warning("embeddings unavailable, search is keyword-only: %s", message)
        self._error = message
        self._state = "unavailable"

    def _load_vectors(self, index: VectorIndex, embedder: Embedder) -> None:
        window_ms = int(self.settings.search.thread_window_minutes * 60_000)

        def read(conn: Any) -> list[tuple[Ref, Ref]]:
            # Before the vectors: a change committed while they are read is applied again.
            self._vector_seq = vector_q.last_change(conn)
            for project_id, rows in vector_q.counts_by_project(conn, embedder.model_id).items():
                index.reserve(project_id, rows + 1024)
            for ref, project_id, blob in vector_q.iter_vectors(conn, embedder.model_id):
                vector = from_blob(blob)
                if vector.shape[0] == embedder.dimensions:
                    index.put(ref, project_id, vector)
            if self.settings.embedding.context_weight <= 0:
                return []
            return vector_q.predecessors(conn, window_ms)

        links = self.store.read_sync(read)
        if links:
            index.mix_predecessors(links, self.settings.embedding.context_weight)

    def _next_batch(self, model: str) -> list[Ref]:
        batch: list[Ref] = []
        size = self.settings.embedding.batch
        if self._queue:
            # Busy before the queue empties or the sweep counts as done: wait_idle reads both.
            self._state = "indexing"
            while self._queue and len(batch) < size:
                batch.append(self._queue.popleft())
            return batch
        if time.monotonic() >= self._sweep_due:
            after = dict(self._sweep_after)
            found = self.store.read_sync(lambda c: vector_q.missing(c, model, size, after))
            if found:
                self._state = "indexing"
            for kind, item_id in found:
                self._sweep_after[kind] = max(self._sweep_after.get(kind, 0), item_id)
            if len(found) < size:
                # This pass is complete: the next one starts from the beginning.
                self._sweep_due = time.monotonic() + SWEEP_SECONDS
                self._sweep_after = {}
            return found
        return []

    def _step(self, embedder: Embedder) -> bool:
        if self.index is None:
            return False
        batch = self._next_batch(embedder.model_id)
        if not batch:
            return False
        started = time.perf_counter()
        window_ms = int(self.settings.search.thread_window_minutes * 60_000)
        context = self.settings.embedding.context_weight

        model = embedder.model_id

        def read(
            conn: Any,
        ) -> tuple[dict[Ref, dict[str, Any]], dict[Ref, Ref], dict[Ref, bytes]]:
            items = item_rows.load_items(conn, batch)
            previous: dict[Ref, Ref] = {}
            stored: dict[Ref, bytes] = {}
            if context > 0:
                links = item_rows.neighbours(conn, list(items), window_ms)
                previous = {ref: prev for ref, (prev, _) in links.items() if prev is not None}
                outside = [p for p in previous.values() if p not in items]
                stored = vector_q.plain_vectors(conn, model, outside)
                items.update(item_rows.load_items(conn, [p for p in outside if p not in stored]))
            return items, previous, stored

        items, previous, stored = self.store.read_sync(read)
        refs = [ref for ref in dict.fromkeys(batch) if ref in items]
        if not refs:
            return True
        # Predecessors with no stored vector yet are embedded along (not saved: their turn comes).
        texts_for = list(dict.fromkeys([*refs, *(p for p in previous.values() if p in items)]))
        texts = [embedding_text(items[ref], self.settings.embedding.max_chars) for ref in texts_for]
        matrix = embedder.embed(texts)
        plain = {ref: matrix[i] for i, ref in enumerate(texts_for)}
        for ref, blob in stored.items():
            plain.setdefault(ref, from_blob(blob))
        rows = [(ref, items[ref]["project_id"], to_blob(plain[ref])) for ref in refs]
        mixed = [context_vector(plain, ref, previous.get(ref), context) for ref in refs]
        contexts = [to_blob(vector) for vector in mixed]
        with self._save_lock:
            # The index as it is now: a reindex may have swapped it while this batch embedded.
            index = self.index
            assert index is not None  # set once at load, never unset
            self.store.write_sync(
                lambda c: vector_q.save(c, embedder.model_id, embedder.dimensions, rows, contexts)
            )
            if isinstance(index, VectorIndex):  # else the write put them in the database's index
                for ref, vector in zip(refs, mixed, strict=True):
                    index.put(ref, items[ref]["project_id"], vector)
        # A memory's clause vectors (retrieval/clauses.py) now, so a prompt need not wait.
        live = [
            items[r]
            for r in refs
            if r[0] == "memory"
            and not items[r].get("archived_at")
            and not items[r].get("superseded_by")
        ]
        self.clauses.warm(embedder, [memory_text(item) for item in live])
        self._embedded += len(refs)
        self._busy_seconds += time.perf_counter() - started
        return True

    def wait_idle(self, timeout: float) -> bool:
        """Block until the model is loaded and nothing is waiting (tests, benchmarks, reindex)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._state in ("unavailable", "disabled"):
                return False
            # A requested sweep not yet done is work too: the thread may not have woken yet.
            swept = self._sweep_due > time.monotonic()
            if self._state == "ready" and not self._queue and swept:
                return True
            time.sleep(0.02)
        return False


def stats(
    service: EmbeddingService | None, settings: Settings, counts: tuple[int, int]
) -> dict[str, Any]:
    """GET /api/embeddings/stats: coverage is the fraction of items with a current vector."""
    status = service.status() if service is not None else {"status": "disabled"}
    done, total = counts
    return {
        "model": status.get("model") or settings.embedding.model,
        "dimensions": status.get("dimensions"),
        "coverage": round(done / total, 4) if total else 1.0,
        "embedded": done,
        "items": total,
        "queue_depth": max(int(status.get("queue_depth") or 0), total - done),
        "status": status["status"],
        "error": status.get("error"),
        "items_per_second": status.get("items_per_second"),
    }
