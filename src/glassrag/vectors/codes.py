"""A segment's rows as compact codes, and how far a score read from them can be off.

The codes live in faiss inverted lists (``IndexIVFScalarQuantizer``, never trained as an IVF:
its lists are not clusters but runs of at most ``LIST_ROWS`` consecutive rows of one role
set). A filtered scan then names the lists of the readable role sets and faiss reads those
and nothing else, into one heap. The flat index with an ``IDSelectorRange`` that this
replaces walked every row of the segment to test membership: 1.6 ms per call at 1M rows
(a 100k range took 3.0 ms against 1.45 ms for a 100k index), 0.16 ms at 105k.

The error bound is measured, not assumed: when the codes are built, every row is decoded and
compared with its float32 original, giving the largest error of each component ``e`` and the
largest error norm ``R`` over all rows. For a query ``q`` a stored row's code score is then
off by at most ``min(|q|*R, sum(|q_i|*e_i))`` (Cauchy-Schwarz, and the triangle inequality
per component), plus float32 rounding of the two dot products. The per-component form is the
tight one for sparse queries (feature-hashed ones: ~0.006 against R = 0.038), the norm form
for dense ones (all-MiniLM-L6-v2: R = 0.014).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from glassrag.vectors.faisslib import faiss_or_none

if TYPE_CHECKING:
    from glassrag.vectors.segment import Segment

# "sq8": one byte per component, one range for all (faiss QT_8bit_uniform); "fp16": two bytes.
QUANTIZERS = {"sq8": "QT_8bit_uniform", "fp16": "QT_fp16"}
LIST_ROWS = 32_768  # rows per list at most: whole lists are what the cores share out
_FP16_MAX = 60000.0  # larger components would overflow float16


@dataclass(frozen=True)
class Codes:
    """A segment's rows as codes in inverted lists, and what decoding them can be off by."""

    faiss: Any
    index: Any  # faiss IndexIVFScalarQuantizer, inner product; ids are segment rows
    quantizer: Any  # its coarse quantizer: never searched, kept alive with the index
    starts: np.ndarray  # first segment row of each list; the lists tile the segment in order
    ends: np.ndarray  # one past the last row of each list
    error: np.ndarray  # per component: the largest |stored - decoded| over all rows
    residual: float  # the largest |row - decoded row| (Euclidean norm)
    rounding: float  # float32 rounding of a code score and of a rescored score, per |q|

    def bound(self, q: np.ndarray) -> float:
        """The most a stored row's code score can differ from its float32 score for ``q``."""
        norm = float(np.linalg.norm(q))
        per_component = float(np.abs(q).astype(np.float64) @ self.error)
        return min(self.residual * norm, per_component) + self.rounding * norm

    def lists_in(self, spans: list[tuple[int, int]]) -> np.ndarray | None:
        """The lists that make up ``spans`` exactly (role-set spans always do), or None
        when a span starts or ends inside a list."""
        picked = []
        for start, end in spans:
            first = int(np.searchsorted(self.starts, start))
            last = int(np.searchsorted(self.ends, end))
            if first > last or first >= len(self.starts) or last >= len(self.ends) \
                    or self.starts[first] != start or self.ends[last] != end:
                return None
            picked.append(np.arange(first, last + 1))
        return np.concatenate(picked) if picked else np.zeros(0, np.int64)

    def rows(self, lists: np.ndarray) -> int:
        return int((self.ends[lists] - self.starts[lists]).sum())

    def top(self, q: np.ndarray, lists: np.ndarray, depth: int,
            selector: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """(code scores, segment rows) of the best ``depth`` rows of ``lists``, best first;
        rows -1 past the end when the lists hold fewer (or fewer that ``selector`` admits)."""
        faiss = self.faiss
        params = faiss.SearchParametersIVF()
        params.nprobe = int(lists.size)
        if selector is not None:
            params.sel = selector
        keys = np.ascontiguousarray(lists, dtype=np.int64).reshape(1, -1)
        keys_score = np.zeros(keys.shape, np.float32)  # coarse scores: unused, no residuals
        query = np.ascontiguousarray(q, dtype=np.float32).reshape(1, -1)
        scores = np.empty((1, depth), np.float32)
        found = np.empty((1, depth), np.int64)
        # The low-level call: the Python wrapper takes no per-call parameters.
        self.index.search_preassigned_c(
            1, faiss.swig_ptr(query), depth, faiss.swig_ptr(keys), faiss.swig_ptr(keys_score),
            faiss.swig_ptr(scores), faiss.swig_ptr(found), False, params)
        return scores[0], found[0]


def build_codes(segment: Segment, kind: str) -> Codes | None:
    """Codes of every row of ``segment``; None without faiss or with values float16 cannot
    hold."""
    faiss = faiss_or_none()
    vectors = segment.vectors
    # No component exceeds its row's norm, so a norm below float16's range bounds them all.
    norm = float(np.sqrt(np.einsum("ij,ij->i", vectors, vectors).max()))
    if faiss is None or (kind == "fp16" and not norm < _FP16_MAX):
        return None
    dim = vectors.shape[1]
    starts, ends = _list_bounds(segment)
    quantizer = faiss.IndexFlatIP(dim)
    quantizer.add(np.zeros((len(starts), dim), np.float32))
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, dim, len(starts), getattr(faiss.ScalarQuantizer, QUANTIZERS[kind]),
        faiss.METRIC_INNER_PRODUCT, False)
    # The range comes from all rows (uniform: one min and max over every component).
    index.sq.train(np.ascontiguousarray(vectors, dtype=np.float32))
    index.is_trained = True
    error = np.zeros(dim, np.float64)
    residual = 0.0
    for number, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        rows = np.ascontiguousarray(vectors[start:end], dtype=np.float32)
        codes = index.sq.compute_codes(rows)
        ids = np.arange(start, end, dtype=np.int64)
        index.invlists.add_entries(number, end - start, faiss.swig_ptr(ids),
                                   faiss.swig_ptr(codes))
        diff = (rows - index.sq.decode(codes)).astype(np.float64)
        np.maximum(error, np.abs(diff).max(axis=0), out=error)
        residual = max(residual, float(np.sqrt(np.einsum("ij,ij->i", diff, diff).max())))
    index.ntotal = segment.size
    # Each float32 dot product of length dim is off by at most dim * 2**-24 * |q| * |row|
    # (recursive summation; faiss's SIMD and BLAS sum in shorter chains); doubled for the
    # two products compared (code score, rescored score), and doubled again for margin.
    rounding = (dim + 16) * 2.0**-22 * norm
    return Codes(faiss, index, quantizer, starts, ends, error, residual, rounding)


def _list_bounds(segment: Segment) -> tuple[np.ndarray, np.ndarray]:
    """Each role set's rows cut into runs of at most ``LIST_ROWS``, in row order."""
    starts: list[int] = []
    ends: list[int] = []
    for start, end in sorted(segment.blocks.values()):
        for cut in range(start, end, LIST_ROWS):
            starts.append(cut)
            ends.append(min(end, cut + LIST_ROWS))
    return np.asarray(starts, np.int64), np.asarray(ends, np.int64)
