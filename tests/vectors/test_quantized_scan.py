"""The exact scan read from codes (8-bit, and float16) against the float32 scan: same rows,
same scores, same counts; the measured error bound holding for every row; and the proof step
refusing (so the float32 scan runs) when near-ties hide the cut."""

from __future__ import annotations

import numpy as np
import pytest

from glassrag.vectors import scan as quantized_scan
from glassrag.vectors.scan import MIN_ROWS, quantized_top
from glassrag.vectors.segment import Segment

pytest.importorskip("faiss")

SETS = np.array([3, 5, 8, 13])


@pytest.fixture(autouse=True, params=["sq8", "fp16"])
def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with each code kind (the cache is keyed by kind)."""
    monkeypatch.setattr(quantized_scan, "KIND", request.param)
    return str(request.param)


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit vectors in tight clusters: many rows score alike, so the cut is often close."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, n)] + 0.15 * rng.standard_normal((n, dim))
    vectors = vectors.astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def segment() -> Segment:
    n, dim = 3 * MIN_ROWS, 48
    rng = np.random.default_rng(7)
    return Segment.build(clustered(n, dim, 7), np.arange(n, dtype=np.int64) * 3 + 1,
                         rng.integers(0, 500, n).astype(np.int32),
                         rng.choice(SETS, n).astype(np.int32))


def float32(segment: Segment, q: np.ndarray, sets: np.ndarray, k: int,
            min_score: float | None) -> tuple[np.ndarray, np.ndarray, int]:
    return segment._float32_top(q, sets, segment._spans(sets), k, min_score, True)


def same_ranking(segment: Segment, q: np.ndarray, sets: np.ndarray,
                 got: tuple[np.ndarray, np.ndarray, int],
                 want: tuple[np.ndarray, np.ndarray, int]) -> None:
    """The same top-k up to float32 rounding: rank by rank, the row found scores what the
    float32 scan's row at that rank scores (rows tied in the last bit may swap), every row is
    readable and distinct, and the counts agree."""
    assert len(got[0]) == len(want[0]) and len(set(got[0].tolist())) == len(got[0])
    order = np.argsort(segment.rowids)
    position = order[np.searchsorted(segment.rowids[order], got[0])]
    assert np.isin(segment.sets[position], sets).all()
    full = np.asarray(segment.vectors[position] @ q, np.float32)
    np.testing.assert_allclose(full, want[1], rtol=0, atol=2e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=2e-6)
    assert got[2] == want[2]


def queries(dim: int, count: int, seed: int, near: np.ndarray | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    qs = rng.standard_normal((count, dim)).astype(np.float32)
    if near is not None:  # questions close to stored rows, as real ones are
        qs = near[rng.integers(0, near.shape[0], count)] + 0.05 * qs
    return (qs / np.linalg.norm(qs, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("sets", [SETS, SETS[:1], SETS[[0, 2, 3]], SETS[[1, 3]]])
@pytest.mark.parametrize("k,min_score", [(10, None), (50, None), (10, 0.3), (40, 0.6)])
def test_same_answer_as_the_float32_scan(segment: Segment, sets: np.ndarray, k: int,
                                         min_score: float | None) -> None:
    used = 0
    for q in queries(segment.vectors.shape[1], 25, 1, near=segment.vectors):
        same_ranking(segment, q, sets, segment.exact(q, sets, k, min_score),
                     float32(segment, q, sets, k, min_score))
        used += quantized_top(segment, q, segment._spans(sets), k, min_score,
                                   False) is not None
    # The fast path must be taken for most questions, or this tests nothing. (With a count
    # of the rows passing min_score, these clusters often refuse: hundreds pass.)
    assert used >= 20


def test_deleted_rows_are_skipped(segment: Segment) -> None:
    dead = np.unique(segment.docs[:: 7])[:200]
    masked = segment.masked(dead)
    assert masked.cache is segment.cache  # same vectors, same coded copy
    for q in queries(segment.vectors.shape[1], 10, 2, near=segment.vectors):
        want = float32(masked, q, SETS[:3], 20, 0.2)
        got = masked.exact(q, SETS[:3], 20, 0.2)
        same_ranking(masked, q, SETS[:3], got, want)
        assert not np.isin(masked.docs[np.isin(masked.rowids, got[0])], dead).any()


def test_near_ties_at_the_cut_fall_back_to_float32() -> None:
    # 700 copies of one row (exact ties, more than even the deeper second scan keeps) plus
    # noise: the top 10 cannot be proved from the code scores, so the proof refuses and the
    # float32 scan answers.
    n, dim = MIN_ROWS + 100, 32
    vectors = clustered(n, dim, 3)
    vectors[:700] = vectors[0]
    segment = Segment.build(vectors, np.arange(n, dtype=np.int64), np.zeros(n, np.int32),
                            np.zeros(n, np.int32))
    q = vectors[0]
    spans = segment._spans(np.array([0]))
    assert quantized_top(segment, q, spans, 10, None, True) is None
    rows, scores, _ = segment.exact(q, np.array([0]), 10, None)
    assert set(rows.tolist()) <= set(range(700))
    np.testing.assert_allclose(scores, 1.0, atol=1e-6)


def test_count_refused_when_more_rows_pass_than_were_rescored(segment: Segment) -> None:
    q = segment.vectors[0]
    spans = segment._spans(SETS)
    # Everything passes -1: the count cannot come from 20 candidates per span.
    assert quantized_top(segment, q, spans, 2, -1.0, True) is None
    assert quantized_top(segment, q, spans, 2, -1.0, False) is not None
    assert segment.exact(q, SETS, 2, -1.0)[2] == segment.size


def test_small_segments_and_huge_values_use_float32(monkeypatch: pytest.MonkeyPatch,
                                                    kind: str) -> None:
    n = MIN_ROWS - 1
    small = Segment.build(clustered(n, 16, 4), np.arange(n, dtype=np.int64),
                          np.zeros(n, np.int32), np.zeros(n, np.int32))
    assert quantized_top(small, small.vectors[0], [(0, n)], 5, None, True) is None
    monkeypatch.setattr(quantized_scan, "MIN_ROWS", 10)
    big = small.vectors.copy()
    big[5, 0] = 1e6  # beyond float16's range
    huge = Segment.build(big, np.arange(n, dtype=np.int64), np.zeros(n, np.int32),
                         np.zeros(n, np.int32))
    # float16 cannot hold it; one byte per component can (one wide range for all of them).
    assert (quantized_scan._codes(huge) is None) == (kind == "fp16")
    q = small.vectors[0]
    same_ranking(huge, q, np.array([0]), huge.exact(q, np.array([0]), 5, None),
                 float32(huge, q, np.array([0]), 5, None))
    assert quantized_top(small, small.vectors[0], [(0, n)], 5, None, True) is not None


def sparse_rows(n: int, dim: int, seed: int) -> np.ndarray:
    """Non-negative rows with a few non-zero components, like feature-hashed text."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((n, dim), np.float32)
    for i in range(n):
        rows[i, rng.integers(0, dim, rng.integers(1, 12))] += 1.0
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("rows", ["clustered", "sparse"])
def test_the_error_bound_holds_for_every_row(rows: str, kind: str) -> None:
    n, dim = MIN_ROWS + 500, 64
    vectors = clustered(n, dim, 9) if rows == "clustered" else sparse_rows(n, dim, 9)
    segment = Segment.build(vectors, np.arange(n, dtype=np.int64), np.zeros(n, np.int32),
                            np.zeros(n, np.int32))
    codes = quantized_scan._codes(segment)
    assert codes is not None
    near = queries(dim, 20, 6, near=vectors)
    for q in np.vstack([near, queries(dim, 20, 7)]):
        # The scores faiss computes from the codes, for every row, against float32 ones.
        approx, found = codes.top(q, np.arange(len(codes.starts)), n)
        assert sorted(found.tolist()) == list(range(n))
        exact = vectors[found].astype(np.float64) @ q.astype(np.float64)
        bound = codes.bound(q)
        assert np.abs(approx - exact).max() <= bound
        # Not vacuous: the bound is far below the spread of the scores it separates.
        assert bound < (0.05 if kind == "sq8" else 0.005) < exact.max() - exact.min()
    if kind == "sq8" and rows == "sparse":
        # A sparse query: the per-component bound is the tighter one.
        q = vectors[0]
        assert float(np.abs(q) @ codes.error) < codes.residual


def test_vector_index_search_agrees_with_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    from glassrag.vectors.index import VectorIndex, VectorRows

    n, dim = 2 * MIN_ROWS, 32
    rng = np.random.default_rng(11)
    rows = VectorRows(np.arange(n, dtype=np.int64) + 100, [f"d{i // 4}" for i in range(n)],
                      rng.choice(SETS, n), clustered(n, dim, 11))
    index = VectorIndex(dim, "hash:32")
    index.rebuild(rows, applied_seq=1)
    asked = [(q, readable) for q in queries(dim, 8, 5, near=rows.vectors)
             for readable in ({3}, {3, 5, 8}, None)]
    fast = [index.search(q, r, 10, blocked_limit=3, min_score=0.5) for q, r in asked]
    monkeypatch.setattr(quantized_scan, "MIN_ROWS", 10 * n)  # float32 only
    slow = [index.search(q, r, 10, blocked_limit=3, min_score=0.5) for q, r in asked]
    for (hits, blocked, blocked_hits), (want, want_blocked, want_blocked_hits) in zip(
            fast, slow, strict=True):
        np.testing.assert_allclose([h.score for h in hits], [h.score for h in want], atol=2e-6)
        assert blocked == want_blocked
        np.testing.assert_allclose([h.score for h in blocked_hits],
                                   [h.score for h in want_blocked_hits], atol=2e-6)


def test_lists_tile_the_role_sets_and_groups_share_them_out(
        segment: Segment, monkeypatch: pytest.MonkeyPatch) -> None:
    from glassrag.vectors import codes as quantized_codes

    monkeypatch.setattr(quantized_codes, "LIST_ROWS", 1000)
    codes = quantized_codes.build_codes(segment, "sq8")
    assert codes is not None
    assert codes.starts[0] == 0 and codes.ends[-1] == segment.size
    assert (codes.starts[1:] == codes.ends[:-1]).all()  # contiguous, in row order
    assert (codes.ends - codes.starts).max() <= 1000
    for start, end in segment.blocks.values():  # no list straddles two role sets
        assert ((codes.starts < start) & (codes.ends > start)).sum() == 0
        assert ((codes.starts < end) & (codes.ends > end)).sum() == 0
    spans = segment._spans(SETS[[0, 2]])
    lists = codes.lists_in(spans)
    assert lists is not None and codes.rows(lists) == sum(e - s for s, e in spans)
    start, end = spans[0]
    assert codes.lists_in([(start + 1, end)]) is None  # a span cutting a list is refused
    assert quantized_top(segment, segment.vectors[0], [(start + 1, end)], 5, None,
                         True) is None
    for parts in (1, 2, 3, 4):
        groups = quantized_scan._groups(codes, lists, parts)
        assert len(groups) == parts
        assert np.concatenate(groups).tolist() == lists.tolist()
        sizes = [codes.rows(group) for group in groups]
        assert max(sizes) - min(sizes) <= 2000


@pytest.mark.parametrize("k,min_score", [(10, None), (30, 0.4)])
def test_many_lists_per_role_set(segment: Segment, k: int, min_score: float | None,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from glassrag.vectors import codes as quantized_codes

    monkeypatch.setattr(quantized_codes, "LIST_ROWS", 700)
    fresh = Segment.build(segment.vectors, segment.rowids, segment.docs, segment.sets)
    proved = 0
    for q in queries(segment.vectors.shape[1], 10, 8, near=segment.vectors):
        for sets in (SETS, SETS[[1, 3]]):
            same_ranking(fresh, q, sets, fresh.exact(q, sets, k, min_score),
                         float32(fresh, q, sets, k, min_score))
            proved += quantized_top(fresh, q, fresh._spans(sets), k, min_score,
                                    False) is not None
    assert proved >= 16


@pytest.mark.parametrize("masked", [False, True])
def test_split_scan_gives_the_same_answer(segment: Segment, masked: bool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quantized_scan, "SPLIT_ROWS", 2000)  # split even this small segment
    monkeypatch.setattr(quantized_scan, "_CORES", 2)  # and split it on a one-core machine too
    target = segment.masked(np.unique(segment.docs)[:50]) if masked else segment
    assert quantized_scan._workers(target.size) == 2
    proved = 0
    for q in queries(segment.vectors.shape[1], 10, 4, near=segment.vectors):
        for sets in (SETS, SETS[[0, 2]]):
            same_ranking(target, q, sets, target.exact(q, sets, 15, 0.1, count=False),
                         float32(target, q, sets, 15, 0.1)[:2] + (0,))
            proved += quantized_top(target, q, target._spans(sets), 15, 0.1,
                                         False) is not None
    assert proved >= 16  # of 20: the split path answered, not the float32 fallback
