"""The exact scan of a large segment, read from compact codes and proved exact in float32.

A brute-force scan is bound by memory bandwidth, so it reads a copy of the rows in one byte
per component (faiss's ``IndexScalarQuantizer``, ``QT_8bit_uniform``; SIMD on one core)
instead of four: 105k x 384 took 1.5 ms here, against 2.5 ms in float16 (``KIND = "fp16"``,
the previous default) and 4.8 ms for single-threaded float32 BLAS. Code scores are not the
float32 ones, so the best ``depth`` rows of each readable span are rescored from the float32
rows, and the answer is accepted only when it is *provably* the float32 top-k: every row left
out of a span scores at most that span's last code score plus the error bound, and that must
stay below the k-th rescored score (and below ``min_score`` when a count of passing rows is
wanted). Otherwise (many near-ties at the cut) the caller runs the float32 scan. So results
never differ from an exact float32 scan.

The error bound is measured, not assumed: when the codes are built, every row is decoded and
compared with its float32 original, giving the largest error of each component ``e`` and the
largest error norm ``R`` over all rows. For a query ``q`` a stored row's code score is then
off by at most ``min(|q|*R, sum(|q_i|*e_i))`` (Cauchy-Schwarz, and the triangle inequality
per component), plus float32 rounding of the two dot products. The per-component form is the
tight one for sparse queries (feature-hashed ones: ~0.006 against R = 0.038), the norm form
for dense ones (all-MiniLM-L6-v2: R = 0.014).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .faisslib import faiss_or_none, one_omp_thread
from .vector_segment import top_k

if TYPE_CHECKING:
    from .vector_segment import Segment

# The code kind: "sq8" (one byte per component, one range for all) or "fp16" (two bytes).
KIND = "sq8"
_QUANTIZER = {"sq8": "QT_8bit_uniform", "fp16": "QT_fp16"}
# Below this many rows the float32 scan is already fast (fits in cache) and needs no copy.
MIN_ROWS = 8192
# Scans of at least this many rows per core are split across the cores (at most this many).
SPLIT_ROWS = 100_000
MAX_WORKERS = 4
RETRY_DEPTH = 8  # the second scan keeps this many times as many rows as the first
COUNT_DEPTH = 4  # a counting scan starts this many times deeper
_FP16_MAX = 60000.0  # larger components would overflow float16
_DECODE_BLOCK = 65_536  # rows decoded at a time when measuring the error (bounded memory)


@dataclass(frozen=True)
class Codes:
    """A segment's rows as codes, and what decoding them can be off by."""

    faiss: Any
    index: Any  # faiss IndexScalarQuantizer over all rows of the segment, inner product
    error: np.ndarray  # per component: the largest |stored - decoded| over all rows
    residual: float  # the largest |row - decoded row| (Euclidean norm)
    rounding: float  # float32 rounding of a code score and of a rescored score, per |q|

    def bound(self, q: np.ndarray) -> float:
        """The most a stored row's code score can differ from its float32 score for ``q``."""
        norm = float(np.linalg.norm(q))
        per_component = float(np.abs(q).astype(np.float64) @ self.error)
        return min(self.residual * norm, per_component) + self.rounding * norm


def quantized_top(segment: Segment, q: np.ndarray, spans: list[tuple[int, int]], k: int,
                  min_score: float | None,
                  count: bool) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(segment rows, float32 scores, rows passing ``min_score``) of the best ``k`` live rows
    of ``spans``, or None when this path does not apply or cannot prove its answer exact."""
    if segment.size < MIN_ROWS:
        return None
    codes = _codes(segment)
    if codes is None:
        return None
    bound = codes.bound(q)
    pieces = _pieces(spans, _workers(spans))
    # Most questions are proved from the first depth (96-99 % on real text, 8-bit); where
    # many rows crowd the cut, a second, deeper scan of the codes still costs less than
    # the float32 scan (1.9 against 4.8 ms at 105k rows, depth 1,024).
    first = k + max(k, 64)
    if count and min_score is not None:
        # Counting rows that pass min_score needs every one of them among those kept; with
        # model embeddings a median 131 blocked rows passed 0.3 (MiniLM, 105k real text).
        first *= COUNT_DEPTH
    for depth in (first, RETRY_DEPTH * first):
        found = _attempt(codes, segment, pieces, q, k, min_score, count, depth, bound)
        if found is not None:
            return found
    return None


def _attempt(codes: Codes, segment: Segment, pieces: list[list[tuple[int, int]]],
             q: np.ndarray, k: int, min_score: float | None, count: bool, depth: int,
             bound: float) -> tuple[np.ndarray, np.ndarray, int] | None:
    """One scan of the codes keeping ``depth`` rows per list; None when it proves nothing."""
    # The calling thread scans the first piece while pool threads scan the others.
    others = [_pool().submit(_search, codes, segment, piece, q, depth)
              for piece in pieces[1:]]
    results = _search(codes, segment, pieces[0], q, depth)
    for other in others:
        results += other.result()
    # Per full list, the best score any row left out of it could have.
    floors = [last + bound for _, _, last in results if last is not None]
    picked = np.concatenate([rows for rows, _, _ in results]) if results \
        else np.zeros(0, np.int64)
    if min_score is not None and picked.size:
        # Rows whose code score is too low to reach min_score need no float32 rescoring:
        # a deep counting scan keeps hundreds of them.
        approx = np.concatenate([scores for _, scores, _ in results])
        picked = picked[approx + bound >= min_score]
    scores = segment.vectors[picked] @ q if picked.size else np.zeros(0, np.float32)
    scores = np.asarray(scores, np.float32)
    if min_score is not None:
        scores[scores < min_score] = -np.inf
    best = top_k(scores, k)
    unseen = max(floors, default=-np.inf)
    kth = float(scores[best[-1]]) if best.size == k else -np.inf
    cut = max(kth, -np.inf if min_score is None else min_score)
    if floors and unseen >= cut:
        return None  # a row not rescored might belong in the top k
    passed = 0
    if count and min_score is not None:
        if floors and unseen >= min_score:
            return None
        passed = int(np.count_nonzero(np.isfinite(scores)))
    return picked[best], scores[best], passed


def _search(codes: Codes, segment: Segment, spans: list[tuple[int, int]],
            q: np.ndarray, depth: int) -> list[tuple[np.ndarray, np.ndarray, float | None]]:
    """Per list searched: the best ``depth`` rows by code score, their code scores, and the
    last one's score when the list is full (rows beyond it were not seen), else None. One
    list per span (an id range each), or one over all of them when deleted rows need a
    bitmap."""
    faiss = codes.faiss
    if segment.live is None:
        selectors = [faiss.IDSelectorRange(start, end) for start, end in spans]
    else:
        selectors = [_live_bitmap(faiss, segment, spans)]
    lists = []
    with one_omp_thread():
        for selector in selectors:
            params = faiss.SearchParameters()
            params.sel = selector
            approx, found = codes.index.search(q[None, :], depth, params=params)
            got = found[0] >= 0
            lists.append((found[0][got], approx[0][got],
                          float(approx[0][-1]) if got.all() else None))
    return lists


def _workers(spans: list[tuple[int, int]]) -> int:
    """One scan per core for big scans: one core alone reads DRAM at about half the
    machine's bandwidth (1M x 384 float16: 55 ms on one core with another job running,
    26-30 ms split in two on the idle machine). Smaller scans are not split: for 80-100k
    rows, paired asks split vs not differed by -0.16 and +0.26 ms, no consistent gain."""
    rows = sum(end - start for start, end in spans)
    return max(1, min(_CORES, MAX_WORKERS, rows // SPLIT_ROWS))


def _pieces(spans: list[tuple[int, int]], parts: int) -> list[list[tuple[int, int]]]:
    """``spans`` cut into ``parts`` groups of about the same number of rows."""
    if parts <= 1:
        return [spans]
    share = -(-sum(end - start for start, end in spans) // parts)
    groups: list[list[tuple[int, int]]] = [[]]
    room = share
    for start, end in spans:
        while end > start:
            if room == 0:
                groups.append([])
                room = share
            cut = min(end, start + room)
            groups[-1].append((start, cut))
            room -= cut - start
            start = cut
    return groups


_POOL: ThreadPoolExecutor | None = None
_CORES = os.cpu_count() or 1


def _pool() -> ThreadPoolExecutor:
    # faiss releases the GIL while it scans, so Python threads run the pieces in parallel.
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(MAX_WORKERS - 1, thread_name_prefix="glassrag-scan")
    return _POOL


def _codes(segment: Segment) -> Codes | None:
    """The segment's codes of ``KIND``, built once per segment's vectors; None without faiss
    or with values float16 cannot hold."""
    key = f"codes:{KIND}"
    cached = segment.cache.get(key)
    if cached is not None:
        return cached or None
    faiss = faiss_or_none()
    vectors = segment.vectors
    # No component exceeds its row's norm, so a norm below float16's range bounds them all.
    norm = float(np.sqrt(np.einsum("ij,ij->i", vectors, vectors).max()))
    if faiss is None or (KIND == "fp16" and not norm < _FP16_MAX):
        segment.cache[key] = ()
        return None
    n, dim = vectors.shape
    index = faiss.IndexScalarQuantizer(dim, getattr(faiss.ScalarQuantizer, _QUANTIZER[KIND]),
                                       faiss.METRIC_INNER_PRODUCT)
    error = np.zeros(dim, np.float64)
    residual = 0.0
    for start in range(0, n, _DECODE_BLOCK):
        block = np.ascontiguousarray(vectors[start:start + _DECODE_BLOCK], dtype=np.float32)
        if start == 0:
            # The range comes from all rows (uniform: one min and max over every component).
            index.train(np.ascontiguousarray(vectors, dtype=np.float32) if n > _DECODE_BLOCK
                        else block)
        index.add(block)
        diff = (block - index.reconstruct_n(start, block.shape[0])).astype(np.float64)
        np.maximum(error, np.abs(diff).max(axis=0), out=error)
        residual = max(residual, float(np.sqrt(np.einsum("ij,ij->i", diff, diff).max())))
    # Each float32 dot product of length dim is off by at most dim * 2**-24 * |q| * |row|
    # (recursive summation; faiss's SIMD and BLAS sum in shorter chains); doubled for the
    # two products compared (code score, rescored score), and doubled again for margin.
    rounding = (dim + 16) * 2.0**-22 * norm
    built = Codes(faiss, index, error, residual, rounding)
    segment.cache[key] = built
    return built


def _live_bitmap(faiss: Any, segment: Segment, spans: list[tuple[int, int]]) -> Any:
    """A faiss selector of the live rows of ``spans``."""
    mask = np.zeros(segment.size, dtype=bool)
    assert segment.live is not None
    for start, end in spans:
        mask[start:end] = segment.live[start:end]
    bits = np.packbits(mask, bitorder="little")
    selector = faiss.IDSelectorBitmap(segment.size, faiss.swig_ptr(bits))
    selector.bits_owner = bits  # the selector points into ``bits``: keep them alive together
    return selector
