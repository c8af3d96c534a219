"""The exact scan of a large segment, read in half precision and proved exact in float32.

A brute-force scan is bound by memory bandwidth, so reading float16 rows (faiss's
``IndexScalarQuantizer`` with ``QT_fp16``, SIMD on one core) instead of float32 halves its
time: 100k x 384 took 2.4 ms against 4.8 ms for single-threaded BLAS here. The float16
scores are not the float32 ones, so the best ``depth`` rows of each readable span are rescored
from the float32 rows, and the answer is accepted only when it is *provably* the float32
top-k: every row left out of a span scores at most that span's last float16 score plus the
rounding bound, and that must stay below the k-th rescored score (and below ``min_score``
when a count of passing rows is wanted). Otherwise (many near-ties at the cut) the caller
runs the float32 scan. So results never differ from an exact float32 scan.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from .faisslib import faiss_or_none, one_omp_thread
from .vector_segment import top_k

if TYPE_CHECKING:
    from .vector_segment import Segment

# Below this many rows the float32 scan is already fast (fits in cache) and needs no copy.
FP16_MIN_ROWS = 8192
# Scans of at least this many rows per core are split across the cores (at most this many).
SPLIT_ROWS = 100_000
MAX_WORKERS = 4
# float16 keeps 11 significant bits: each stored component is off by at most 2**-11 of
# itself, so for a unit query the score is off by at most 2**-11 * |row| (Cauchy-Schwarz);
# twice that covers float32 accumulation order as well.
_ROUNDING = 2.0**-10
_FP16_MAX = 60000.0  # larger components would overflow float16


def half_precision_top(segment: Segment, q: np.ndarray, spans: list[tuple[int, int]], k: int,
                       min_score: float | None,
                       count: bool) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(segment rows, float32 scores, rows passing ``min_score``) of the best ``k`` live rows
    of ``spans``, or None when this path does not apply or cannot prove its answer exact."""
    if segment.size < FP16_MIN_ROWS:
        return None
    codes = _codes(segment)
    if codes is None:
        return None
    faiss, index, bound = codes
    depth = k + max(k, 16)
    pieces = _pieces(spans, _workers(spans))
    # The calling thread scans the first piece while pool threads scan the others.
    others = [_pool().submit(_search, faiss, index, segment, piece, q, depth)
              for piece in pieces[1:]]
    results = _search(faiss, index, segment, pieces[0], q, depth)
    for other in others:
        results += other.result()
    rows = [found for found, _ in results]
    # Per full list, the best score any row left out of it could have.
    floors = [last + bound for _, last in results if last is not None]
    picked = np.concatenate(rows) if rows else np.zeros(0, np.int64)
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


def _search(faiss: Any, index: Any, segment: Segment, spans: list[tuple[int, int]],
            q: np.ndarray, depth: int) -> list[tuple[np.ndarray, float | None]]:
    """Per list searched: the best ``depth`` rows by float16 score, and the last one's score
    when the list is full (rows beyond it were not seen), else None. One list per span (an
    id range each), or one over all of them when deleted rows need a bitmap."""
    if segment.live is None:
        selectors = [faiss.IDSelectorRange(start, end) for start, end in spans]
    else:
        selectors = [_live_bitmap(faiss, segment, spans)]
    lists = []
    with one_omp_thread():
        for selector in selectors:
            params = faiss.SearchParameters()
            params.sel = selector
            approx, found = index.search(q[None, :], depth, params=params)
            got = found[0] >= 0
            lists.append((found[0][got], float(approx[0][-1]) if got.all() else None))
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


def _codes(segment: Segment) -> tuple[Any, Any, float] | None:
    """(faiss, the float16 index over all rows, the score rounding bound), built once per
    segment's vectors; None without faiss or with values float16 cannot hold."""
    cached = segment.cache.get("fp16")
    if cached is not None:
        return cached or None
    faiss = faiss_or_none()
    vectors = segment.vectors
    # No component exceeds its row's norm, so a norm below float16's range bounds them all.
    norm = float(np.sqrt(np.einsum("ij,ij->i", vectors, vectors).max()))
    if faiss is None or not norm < _FP16_MAX:
        segment.cache["fp16"] = ()
        return None
    index = faiss.IndexScalarQuantizer(vectors.shape[1], faiss.ScalarQuantizer.QT_fp16,
                                       faiss.METRIC_INNER_PRODUCT)
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    built = (faiss, index, _ROUNDING * norm)
    segment.cache["fp16"] = built
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
