"""The knowledge base's dense side: which embedder, the stored vectors, the vector index.

The vector index is derived like the lexical one: it replays the SQLite change log, records
the last change it applied, and is saved under ``index/vectors``. Embeddings live in SQLite
keyed by chunk-text hash and model, so an unchanged chunk is never embedded twice and a
failed embedding run resumes where it stopped (``glassrag embed``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from glassrag.dense import embeddings as vectorstore
from glassrag.dense.base import Embedder, Progress
from glassrag.dense.embedders import parse_embedder
from glassrag.dense.embeddings import EmbedReport
from glassrag.errors import GlassragError, InvalidInput
from glassrag.locks import exclusive
from glassrag.settings import DenseSettings
from glassrag.store.database import Store
from glassrag.vectors.index import DEFAULT_HNSW_THRESHOLD, HnswParams, VectorIndex, VectorMatch


def hnsw_params(settings: DenseSettings) -> HnswParams:
    """The vector index's parameters from the ``[dense]`` settings: the two a user sets
    (``hnsw_threshold``, ``target_recall``) and the index's own defaults for the rest."""
    return HnswParams(threshold=settings.hnsw_threshold, target_recall=settings.target_recall)


class DenseRetriever:
    """A knowledge base's dense retrieval: its embedder, stored vectors and vector index.

    Cheap to create; the embedder and the index load on first use. A search is two calls,
    :meth:`embed_query` (the model, which needs no store access) then :meth:`search` (the
    store and index), so a caller can hold its lock around the second alone."""

    def __init__(self, kb_dir: Path, store: Store, spec: str | None,
                 params: HnswParams | None = None) -> None:
        self.params = params
        self.directory = kb_dir / "index" / "vectors"
        self.store = store
        recorded = vectorstore.recorded_model(store.db)
        self.spec = spec or (recorded[0] if recorded else None)
        self._embedder: Embedder | None = None
        self._index: VectorIndex | None = None

    @property
    def enabled(self) -> bool:
        return self.spec is not None

    @property
    def hnsw_threshold(self) -> int:
        return self.params.threshold if self.params else DEFAULT_HNSW_THRESHOLD

    @property
    def embedder(self) -> Embedder:
        if self.spec is None:
            raise InvalidInput(
                "dense and hybrid modes need an embedder: pass --embedder (e.g. "
                "st:all-MiniLM-L6-v2) or set [dense] embedder in glassrag.toml",
                field="embedder",
            )
        if self._embedder is None:
            self._embedder = parse_embedder(self.spec)
        return self._embedder

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        # The lexical index's lock: derived indexes are maintained one writer at a time.
        return exclusive(self.directory.parent / "index.lock")

    def index(self) -> VectorIndex:
        """The vector index, loaded or rebuilt, caught up with the change log."""
        embedder = self.embedder
        if self._index is None or self._index.model != embedder.name:
            vectorstore.check_model(self.store.db, embedder)
            loaded = VectorIndex.load(self.directory, self.params)
            if loaded is None or loaded.model != embedder.name or loaded.dim != embedder.dim:
                loaded = VectorIndex(embedder.dim, embedder.name, self.params)
            self._index = loaded
            due = loaded.needs_compaction()  # e.g. hnsw_threshold lowered since the last save
        else:
            due = False
        if self.store.last_seq() == self._index.applied_seq and not due:
            return self._index  # up to date: no lock, no replay
        with self._locked():
            changed = vectorstore.catch_up(self._index, self.store.db)
            if changed or due:
                if self._index.needs_compaction():
                    self._index.compact(self.calibration_questions())
                self._index.save(self.directory)
        return self._index

    def embed(self, progress: Progress | None = None) -> EmbedReport:
        """Embed every chunk that has no vector for this embedder yet; update the index."""
        embedder = self.embedder
        vectorstore.check_model(self.store.db, embedder)
        # Catch the index up first (chunks without vectors are skipped), then add the new
        # vectors once: catching up afterwards would load them and refresh them again.
        index = self.index()
        report = vectorstore.embed_pending(self.store.db, embedder, progress)
        if vectorstore.recorded_model(self.store.db) is None:
            self.store.begin()
            vectorstore.record_model(self.store.db, embedder.name, embedder.dim)
            self.store.commit()
        if report.doc_ids:
            with self._locked():
                vectorstore.refresh_docs(index, self.store.db, report.doc_ids)
                # Past the size threshold the vectors belong in the HNSW graph; otherwise
                # they would sit in the exact-scan delta and every query would scan them.
                if index.needs_compaction():
                    index.compact(self.calibration_questions())
                index.save(self.directory)
        return report

    def calibration_questions(self) -> np.ndarray | None:
        """The most recent distinct questions asked of this knowledge base (from the traces),
        embedded, for calibrating an HNSW graph; None when there are too few. They are used
        only to measure the graph's recall and are not kept."""
        from glassrag.vectors.hnsw import CALIBRATION_SAMPLE, MIN_QUESTIONS

        if self._index is None or len(self._index) < self.hnsw_threshold:
            return None  # no graph will be built: embed nothing
        rows = self.store.db.execute(
            "SELECT question FROM traces GROUP BY question ORDER BY max(created_at) DESC"
            " LIMIT ?", (CALIBRATION_SAMPLE,)).fetchall()
        if len(rows) < MIN_QUESTIONS:
            return None
        try:
            return np.asarray(self.embedder.embed_queries([r[0] for r in rows]), np.float32)
        except GlassragError:
            return None  # an unreachable embedder: calibrate on stored vectors instead

    def describe(self) -> dict[str, Any]:
        """The saved vector index as ``status`` shows it (read from its state file; nothing
        is loaded or rebuilt): model, vectors, exact or HNSW search, the graph's calibration."""
        from glassrag.vectors.persist import read_state

        state = read_state(self.directory)
        info: dict[str, Any] = {"embedder": self.spec, "vectors": state.get("count", 0),
                                "search": "hnsw" if state.get("hnsw") else "exact",
                                "hnsw_threshold": self.hnsw_threshold}
        if state.get("calibration"):
            info["calibration"] = state["calibration"]
        return info

    def embed_query(self, query: str) -> np.ndarray:
        """The query's vector. Runs the model (or calls the embedding server) and touches
        neither the store nor the index."""
        return self.embedder.embed_queries([query])[0]

    def search(self, vector: np.ndarray, readable: Collection[int] | None, limit: int,
               blocked_limit: int, min_score: float | None, exact: bool = False,
               ) -> tuple[list[VectorMatch], int, list[VectorMatch]]:
        """The best readable rows for a vector from :meth:`embed_query`, as
        :meth:`VectorIndex.search` returns them (the index caught up first)."""
        return self.index().search(vector, readable, limit, blocked_limit, min_score,
                                   exact=exact)
