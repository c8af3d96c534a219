"""One immutable block of vectors grouped by role set, with exact (numpy) search.

A segment's rows are sorted by role-set number, so the rows of one role set are the
contiguous range ``blocks[set]``. A filtered exact scan reads only the allowed ranges
(adjacent ones merged): memory is read sequentially, which is what makes a brute-force scan
run near memory bandwidth.

A large segment is scanned from one-byte codes (see :mod:`glassrag.vectors.scan`): a quarter of the
bytes to read, then the best candidates are rescored from the float32 rows, and the result is
checked to be the float32 top-k -- when the check cannot prove it, the float32 scan runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from glassrag.vectors.scan import quantized_top
from glassrag.vectors.topk import top_k

_NEG_INF = np.float32(-np.inf)


def empty_rows(dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (np.zeros((0, dim), np.float32), np.zeros(0, np.int64), np.zeros(0, np.int32),
            np.zeros(0, np.int32))


def scan(block: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``block @ q``: BLAS sgemv, multi-threaded by OpenBLAS.

    Measured on 2 cores with the machine otherwise idle, a hybrid ask over 100k exact-scanned
    vectors took 5.4 ms with it and 9.0 ms with einsum split over two Python threads. With
    another busy process, OpenBLAS's spinning threads lose badly instead (8.0 vs 0.9 ms for a
    20k scan), so ``glassrag serve``, whose concurrent requests keep every core busy, limits
    BLAS to one thread per call (``cli_server.one_blas_thread``).
    """
    return block @ q


@dataclass(frozen=True)
class Segment:
    vectors: np.ndarray  # (n, dim) float32, rows grouped by role set
    rowids: np.ndarray  # (n,) int64 chunk rowids in SQLite
    docs: np.ndarray  # (n,) int32 document numbers (VectorIndex.docs)
    sets: np.ndarray  # (n,) int32 role-set numbers (VectorIndex.rolesets), sorted
    live: np.ndarray | None  # (n,) bool, None when every row is live
    blocks: dict[int, tuple[int, int]]  # role set -> [start, end)
    # Derived, built on first use: the coded copy ("codes:sq8"). Never compared.
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, vectors: np.ndarray, rowids: np.ndarray, docs: np.ndarray,
              sets: np.ndarray) -> Segment:
        if sets.size and np.any(sets[1:] < sets[:-1]):
            # A stable sort keeps the caller's order within a role set (document order).
            order = np.argsort(sets, kind="stable")
            vectors, rowids, docs, sets = vectors[order], rowids[order], docs[order], sets[order]
        starts = np.flatnonzero(np.r_[True, sets[1:] != sets[:-1]]) if sets.size else np.zeros(0)
        blocks: dict[int, tuple[int, int]] = {}
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else sets.size
            blocks[int(sets[start])] = (int(start), int(end))
        return cls(vectors, rowids, docs, sets, None, blocks)

    @property
    def size(self) -> int:
        return int(self.rowids.shape[0])

    @property
    def live_count(self) -> int:
        return self.size if self.live is None else int(self.live.sum())

    def live_in(self, sets: np.ndarray) -> int:
        total = 0
        for s in sets:
            block = self.blocks.get(int(s))
            if block is not None:
                start, end = block
                total += end - start if self.live is None else int(self.live[start:end].sum())
        return total

    def _spans(self, sets: np.ndarray) -> list[tuple[int, int]]:
        ranges = sorted(self.blocks[int(s)] for s in sets if int(s) in self.blocks)
        spans: list[tuple[int, int]] = []
        for start, end in ranges:
            if spans and spans[-1][1] == start:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        return spans

    def mask(self, sets: np.ndarray) -> np.ndarray:
        """A bool per row: in an allowed role set and live (the HNSW filter bitmap)."""
        bits = np.zeros(self.size, dtype=bool)
        for start, end in self._spans(sets):
            bits[start:end] = True
        if self.live is not None:
            bits &= self.live
        return bits

    # -- updates (each returns a new segment) -----------------------------------------
    def masked(self, doc_nums: np.ndarray) -> Segment:
        """Mark rows of ``doc_nums`` deleted, keeping positions (an HNSW graph points at them)."""
        if doc_nums.size == 0 or self.size == 0:
            return self
        hit = np.isin(self.docs, doc_nums)
        if not hit.any():
            return self
        live = ~hit if self.live is None else self.live & ~hit
        # Same vectors: the coded copy stays valid, so the cache is shared.
        return Segment(self.vectors, self.rowids, self.docs, self.sets, live, self.blocks,
                       self.cache)

    def without_docs(self, doc_nums: np.ndarray) -> Segment:
        """Physically drop rows of ``doc_nums`` (and any masked rows)."""
        keep = np.ones(self.size, dtype=bool) if self.live is None else self.live.copy()
        if doc_nums.size and self.size:
            keep &= ~np.isin(self.docs, doc_nums)
        if keep.all():
            return self
        return Segment.build(self.vectors[keep], self.rowids[keep], self.docs[keep],
                             self.sets[keep])

    def merged(self, other: Segment) -> Segment:
        """Live rows of both, regrouped into one segment."""
        a, b = self.without_docs(np.zeros(0, np.int32)), other.without_docs(np.zeros(0, np.int32))
        if b.size == 0:
            return a
        if a.size == 0:
            return b
        return Segment.build(np.concatenate([a.vectors, b.vectors]),
                             np.concatenate([a.rowids, b.rowids]),
                             np.concatenate([a.docs, b.docs]), np.concatenate([a.sets, b.sets]))

    # -- search -------------------------------------------------------------------------
    def exact(self, q: np.ndarray, sets: np.ndarray, k: int, min_score: float | None,
              count: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
        """Exact top-``k`` over the allowed role sets: (rowids, scores, matching count).

        The count is the number of live scanned rows at or above ``min_score`` (all live
        scanned rows when it is None); 0 when ``count`` is False (not wanted, not computed).
        """
        spans = self._spans(sets)
        if not spans or k < 1:
            return np.zeros(0, np.int64), np.zeros(0, np.float32), 0
        found = quantized_top(self, q, spans, k, min_score, count)
        if found is not None:
            rows, scores, passed = found
            if count and min_score is None:
                passed = self.live_in(sets)
            return self.rowids[rows], scores, passed
        return self._float32_top(q, sets, spans, k, min_score, count)

    def _float32_top(self, q: np.ndarray, sets: np.ndarray, spans: list[tuple[int, int]],
                     k: int, min_score: float | None,
                     count: bool) -> tuple[np.ndarray, np.ndarray, int]:
        if not spans or k < 1:
            return np.zeros(0, np.int64), np.zeros(0, np.float32), 0
        pieces = []
        for start, end in spans:
            part = scan(self.vectors[start:end], q)
            if self.live is not None:
                part[~self.live[start:end]] = _NEG_INF
            pieces.append(part)
        scores = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        passed = 0
        if min_score is not None:
            scores[scores < min_score] = _NEG_INF
            passed = int(np.count_nonzero(scores > _NEG_INF)) if count else 0
        elif count:
            passed = self.live_in(sets)
        best = top_k(scores, k)
        # Map positions in the concatenated scores back to segment rows.
        offsets = np.cumsum([0] + [end - start for start, end in spans])
        span_of = np.searchsorted(offsets, best, side="right") - 1
        rows = np.asarray([spans[s][0] for s in span_of], np.int64) + (best - offsets[span_of])
        return self.rowids[rows], scores[best], passed
