"""An embedder that blocks until released, and the two documents the request-path tests
search: for checking that no lock is held while a model embeds a query."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from glassrag.dense.base import Progress
from glassrag.dense.hash_embedder import HashEmbedder

# A deadlock guard, not a speed assertion: every wait below returns at once when it works.
WAIT = 30.0


SLOW = "slowly"  # a query with this word waits in the embedder until released


DOCS = [
    {"doc_id": "refunds", "title": "Refund policy", "source": "policy/refunds.md",
     "roles": ["public"],
     "text": "Refunds reach the original card within fourteen days. Keep the receipt."},
    {"doc_id": "payroll", "title": "Payroll", "source": "hr/payroll.md", "roles": ["hr"],
     "text": "Salary bands are reviewed every March by the payroll committee."},
]


class GatedEmbedder(HashEmbedder):
    """``hash:DIM``'s vectors under the spec ``gated:DIM``, counting the passages embedded;
    embedding a query that holds :data:`SLOW` blocks until ``release`` is set, as a slow
    model or a remote embedder would."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.name = f"gated:{dim}"
        self.passages = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        self.passages += len(texts)
        return super().embed(texts, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if any(SLOW in t for t in texts):
            self.entered.set()
            assert self.release.wait(WAIT), "the slow query was never released"
        return super().embed_queries(texts)
