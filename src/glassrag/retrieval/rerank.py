"""Rerankers: reorder retrieved hits with a closer look at query and chunk together.

Both rerankers keep what came before: a hit's earlier ``scores``/``ranks`` stay, the
reranker's own go under ``"rerank"``, and ``score`` becomes the rerank score. Equal rerank
scores keep the incoming order, so reranking never shuffles ties at random.

* :class:`LexicalCoverageReranker` -- model-free: the share of the query's terms a chunk
  contains, each term weighted by how rare it is among the candidates (a term every
  candidate has tells them apart least).
* :class:`CrossEncoderReranker` -- a sentence-transformers CrossEncoder from a local path.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from glassrag.errors import needs_extra
from glassrag.records import Hit
from glassrag.text.analysis import analyze, unique_terms

RERANK = "rerank"


def _reordered(hits: Sequence[Hit], scores: Sequence[float]) -> list[Hit]:
    order = sorted(range(len(hits)), key=lambda i: -scores[i])  # stable: ties keep rank
    return [
        dataclasses.replace(
            hits[i], score=float(scores[i]),
            scores={**hits[i].scores, RERANK: float(scores[i])},
            ranks={**hits[i].ranks, RERANK: rank},
        )
        for rank, i in enumerate(order, start=1)
    ]


class LexicalCoverageReranker:
    """Weighted coverage of the query's analysed terms; scores are in [0, 1].

    ``term_weights`` (e.g. corpus IDF) replaces the weights computed from the candidates.
    """

    name = "coverage"

    def __init__(self, term_weights: Mapping[str, float] | None = None) -> None:
        self.term_weights = term_weights

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        terms = unique_terms(analyze(query))
        present = [set(analyze(f"{h.chunk.heading or ''}\n{h.chunk.text}")) for h in hits]
        if not terms or not hits:
            return _reordered(hits, [0.0] * len(hits))
        weights = {t: self._weight(t, present) for t in terms}
        total = sum(weights.values()) or 1.0
        scores = [sum(w for t, w in weights.items() if t in tokens) / total for tokens in present]
        return _reordered(hits, scores)

    def _weight(self, term: str, present: list[set[str]]) -> float:
        if self.term_weights is not None:
            return max(float(self.term_weights.get(term, 0.0)), 0.0)
        df = sum(term in tokens for tokens in present)
        # BM25's IDF over the candidate set, kept positive (a term in every hit still counts).
        return math.log(1.0 + (len(present) - df + 0.5) / (df + 0.5))

    __call__ = rerank


class CrossEncoderReranker:
    """Scores (query, chunk text) pairs with a CrossEncoder loaded from local files only."""

    name = "cross-encoder"

    def __init__(self, path: str, batch_size: int = 32, max_length: int | None = 512,
                 device: str = "cpu") -> None:
        self.path = path
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._model: Any = None
        self._loading = threading.Lock()

    def _load(self) -> Any:
        with self._loading:  # concurrent requests of a server: load the model once
            if self._model is None:
                with needs_extra("dense", "sentence-transformers"):
                    from sentence_transformers import CrossEncoder
                from glassrag.dense.local_models import quiet_transformers

                quiet_transformers()
                self._model = CrossEncoder(self.path, device=self.device,
                                           local_files_only=True, max_length=self.max_length)
        return self._model

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        pairs = [(query, h.chunk.text) for h in hits]
        scores = self._load().predict(pairs, batch_size=self.batch_size,
                                      show_progress_bar=False)
        return _reordered(hits, [float(s) for s in scores])

    __call__ = rerank


@functools.lru_cache(maxsize=4)
def cross_encoder(path: str) -> CrossEncoderReranker:
    """The reranker for ``rerank = "cross:PATH"``, one per path for the process. Before this
    every query loaded the model again: 0.2-0.4 s of each reranked SciFact query."""
    return CrossEncoderReranker(path)
