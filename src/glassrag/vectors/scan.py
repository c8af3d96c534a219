"""The exact scan of a large segment, read from compact codes and proved exact in float32.

A brute-force scan is bound by memory bandwidth, so it reads a copy of the rows in one byte
per component (faiss ``QT_8bit_uniform``; SIMD on one core) instead of four: 105k x 384 took
1.5 ms here, against 2.5 ms in float16 (``KIND = "fp16"``, the previous default) and 4.8 ms
for single-threaded float32 BLAS. Code scores are not the float32 ones, so the best
``depth`` readable rows are rescored from the float32 rows, and the answer is accepted only
when it is *provably* the float32 top-k: every row left out scores at most the last kept
code score plus the error bound, and that must stay below the k-th rescored score (and below
``min_score`` when a count of passing rows is wanted). Otherwise (many near-ties at the cut)
the caller runs the float32 scan. So results never differ from an exact float32 scan.

The codes and their error bound are :mod:`quantized_codes`.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from glassrag.vectors.codes import Codes, build_codes
from glassrag.vectors.faisslib import one_omp_thread
from glassrag.vectors.topk import top_k

if TYPE_CHECKING:
    from glassrag.vectors.segment import Segment

KIND = "sq8"  # the code kind: "sq8" (one byte per component) or "fp16" (two bytes)
# Below this many rows the float32 scan is already fast (fits in cache) and needs no copy.
MIN_ROWS = 8192
# Scans of at least this many rows per core are split across the cores (at most this many).
SPLIT_ROWS = 100_000
MAX_WORKERS = 4
RETRY_DEPTH = 8  # the second scan keeps this many times as many rows as the first
COUNT_DEPTH = 4  # a counting scan starts this many times deeper


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
    lists = codes.lists_in(spans)
    if lists is None or lists.size == 0:
        return None  # nothing to scan, or a span that cuts a list (role-set spans never do)
    bound = codes.bound(q)
    groups = _groups(codes, lists, _workers(codes.rows(lists)))
    # One bitmap of the live rows for every scan below (None: all rows are live).
    selector = None if segment.live is None else _live_bitmap(codes.faiss, segment)
    # Most questions are proved from the first depth (96-99 % on real text, 8-bit); where
    # many rows crowd the cut, a second, deeper scan of the codes still costs less than
    # the float32 scan (1.9 against 4.8 ms at 105k rows, depth 1,024).
    first = k + max(k, 64)
    if count and min_score is not None:
        # Counting rows that pass min_score needs every one of them among those kept; with
        # model embeddings a median 131 blocked rows passed 0.3 (MiniLM, 105k real text).
        first *= COUNT_DEPTH
    for depth in (first, RETRY_DEPTH * first):
        found = _attempt(codes, segment, groups, selector, q, k, min_score, count, depth,
                         bound)
        if found is not None:
            return found
    return None


def _attempt(codes: Codes, segment: Segment, groups: list[np.ndarray], selector: Any,
             q: np.ndarray, k: int, min_score: float | None, count: bool, depth: int,
             bound: float) -> tuple[np.ndarray, np.ndarray, int] | None:
    """One scan of the codes keeping ``depth`` rows per group (one heap each, one group per
    core); None when it proves nothing."""
    # The calling thread scans the first group while pool threads scan the others.
    others = [_pool().submit(_search, codes, group, selector, q, depth)
              for group in groups[1:]]
    results = [_search(codes, groups[0], selector, q, depth)]
    results += [other.result() for other in others]
    # Per full heap, the best score any row left out of it could have.
    floors = [last + bound for _, _, last in results if last is not None]
    picked = np.concatenate([rows for rows, _, _ in results])
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


def _search(codes: Codes, lists: np.ndarray, selector: Any, q: np.ndarray,
            depth: int) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The best ``depth`` live rows of ``lists`` by code score, their code scores, and the
    last one's score when the heap was full (rows beyond it were not kept), else None."""
    with one_omp_thread():
        approx, found = codes.top(q, lists, depth, selector)
    got = found >= 0
    return found[got], approx[got], float(approx[-1]) if got.all() else None


def _workers(rows: int) -> int:
    """One scan per core for big scans: one core alone reads DRAM at about half the
    machine's bandwidth (1M x 384 float16: 55 ms on one core with another job running,
    26-30 ms split in two on the idle machine). Smaller scans are not split: for 80-100k
    rows, paired asks split vs not differed by -0.16 and +0.26 ms, no consistent gain."""
    return max(1, min(_CORES, MAX_WORKERS, rows // SPLIT_ROWS))


def _groups(codes: Codes, lists: np.ndarray, parts: int) -> list[np.ndarray]:
    """``lists`` cut into at most ``parts`` groups of whole lists, of about the same number
    of rows."""
    if parts <= 1 or lists.size <= 1:
        return [lists]
    total = np.cumsum(codes.ends[lists] - codes.starts[lists])
    cuts = np.searchsorted(total, total[-1] * np.arange(1, parts) / parts, side="right")
    return [group for group in np.split(lists, cuts) if group.size]


_POOL: ThreadPoolExecutor | None = None
_CORES = os.cpu_count() or 1


def _pool() -> ThreadPoolExecutor:
    # faiss releases the GIL while it scans, so Python threads run the pieces in parallel.
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(MAX_WORKERS - 1, thread_name_prefix="glassrag-scan")
    return _POOL


def _codes(segment: Segment) -> Codes | None:
    """The segment's codes of ``KIND``, built once per segment's vectors (the cache is shared
    by copies that only mark rows deleted); None when they cannot be built."""
    key = f"codes:{KIND}"
    cached = segment.cache.get(key)
    if cached is None:
        cached = build_codes(segment, KIND) or ()
        segment.cache[key] = cached
    return cached or None


def _live_bitmap(faiss: Any, segment: Segment) -> Any:
    """A faiss selector of the segment's live rows."""
    assert segment.live is not None
    bits = np.packbits(segment.live, bitorder="little")
    selector = faiss.IDSelectorBitmap(segment.size, faiss.swig_ptr(bits))
    selector.bits_owner = bits  # the selector points into ``bits``: keep them alive together
    return selector
