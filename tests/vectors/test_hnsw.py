"""HNSW calibration: the graph's recall is measured on the index's own vectors when it is
built, the beam is widened to reach the target, and a graph that cannot reach it is dropped
for the exact scan. Checked against brute force, with real faiss graphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import top_rows
from glassrag.vectors.hnsw import (
    build_graph,
    calibrate,
    exact_kth_scores,
    graph_recall,
    sample_positions,
)
from glassrag.vectors.index import HnswParams, VectorIndex, VectorRows, load_faiss

faiss = load_faiss()


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Vectors around 50 topics: the structure model embeddings of real text have."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((50, dim))
    return unit(centers[rng.integers(0, 50, n)] + 0.5 * rng.standard_normal((n, dim)))


def spread(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Uniform on the sphere: no structure, the hard case for a graph (like hash vectors)."""
    return unit(np.random.default_rng(seed).standard_normal((n, dim)))


def rows_of(vectors: np.ndarray) -> VectorRows:
    n = vectors.shape[0]
    return VectorRows(np.arange(n, dtype=np.int64) + 1, [f"d{i}" for i in range(n)],
                      np.full(n, 3, np.int32), vectors)


def test_kth_scores_match_brute_force() -> None:
    vectors = spread(500, 16, seed=1)
    positions = sample_positions(500, 40)
    kth = exact_kth_scores(vectors, vectors[positions], positions, k=10)
    for row, pos in enumerate(positions):
        others = np.delete(vectors @ vectors[pos], pos)
        assert kth[row] == pytest.approx(np.sort(others)[-10], abs=1e-6)


def test_sample_is_reproducible_and_without_repeats() -> None:
    first, second = sample_positions(10_000), sample_positions(10_000)
    assert np.array_equal(first, second) and np.unique(first).size == first.size == 200
    assert sample_positions(7).tolist() == list(range(7))


def test_graph_recall_matches_a_hand_count() -> None:
    vectors = clustered(3000, 24, seed=2)
    graph = build_graph(faiss, vectors, m=8, ef_construction=40)
    positions = sample_positions(3000, 30)
    kth = exact_kth_scores(vectors, vectors[positions], positions)
    params = faiss.SearchParametersHNSW()
    params.efSearch = 16
    _, found = graph.search(vectors[positions], 11, params=params)
    want = 0
    for row, pos in enumerate(positions):
        truth = set(np.argsort(-np.delete(vectors @ vectors[pos], pos))[:10])
        truth = {t + (t >= pos) for t in truth}  # back to positions in the full matrix
        got = [f for f in found[row] if f >= 0 and f != pos][:10]
        want += len(truth & set(got))
    assert graph_recall(faiss, graph, vectors[positions], positions, kth, 16) == pytest.approx(
        want / (10 * len(positions)), abs=0.01)  # ids vs scores differ only on exact ties


def test_structured_vectors_are_accepted_at_the_first_beam() -> None:
    vectors = clustered(4000, 32)
    graph = build_graph(faiss, vectors, m=16, ef_construction=64)
    result = calibrate(faiss, graph, vectors, ef_start=64, ef_max=512, target=0.95)
    # Stored vectors stand in for questions, so the bar is stricter: 1 - 0.05 / 5.
    assert result.queries == "stored vectors" and result.required == 0.99
    assert result.accepted and result.ef_search == 64 and result.recall_at_10 >= 0.99


def test_kth_scores_of_new_questions_match_brute_force() -> None:
    vectors = spread(700, 16, seed=8)
    questions = spread(60, 16, seed=9)
    kth = exact_kth_scores(vectors, questions)
    for row, q in enumerate(questions):
        assert kth[row] == pytest.approx(np.sort(vectors @ q)[-10], abs=1e-6)


def test_real_questions_calibrate_at_the_target_itself() -> None:
    vectors = clustered(4000, 32, seed=4)
    graph = build_graph(faiss, vectors, m=8, ef_construction=32)
    rng = np.random.default_rng(12)
    # Questions between the clusters' members: harder than the stored vectors themselves.
    questions = vectors[rng.integers(0, 4000, 120)] + vectors[rng.integers(0, 4000, 120)]
    questions /= np.linalg.norm(questions, axis=1, keepdims=True)
    got = calibrate(faiss, graph, vectors, ef_start=8, ef_max=512, target=0.95,
                    questions=questions)
    assert got.queries == "questions" and got.sample == 120 and got.required == 0.95
    # The recall reported is the questions' own, counted by brute force here.
    params = faiss.SearchParametersHNSW()
    params.efSearch = got.ef_search
    _, found = graph.search(questions, 10, params=params)
    truth = np.argsort(-(questions @ vectors.T), axis=1)[:, :10]
    hand = np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)])
    assert got.recall_at_10 == pytest.approx(hand, abs=0.01) and got.recall_at_10 >= 0.95
    few = calibrate(faiss, graph, vectors, 8, 512, 0.95, questions=questions[:49])
    assert few.queries == "stored vectors"  # too few questions: the stand-ins


def test_the_beam_widens_until_the_target_and_gives_up_at_the_cap() -> None:
    vectors = spread(4000, 64)
    graph = build_graph(faiss, vectors, m=4, ef_construction=16)
    narrow = calibrate(faiss, graph, vectors, ef_start=10, ef_max=10, target=0.99)
    assert not narrow.accepted and narrow.ef_search == 10
    wider = calibrate(faiss, graph, vectors, ef_start=10, ef_max=640, target=narrow.recall_at_10
                      + 0.05)
    assert wider.ef_search > 10 and wider.recall_at_10 > narrow.recall_at_10


def test_a_rejected_graph_leaves_the_index_exact(tmp_path: Path) -> None:
    vectors = spread(3000, 64)
    params = HnswParams(threshold=1000, m=4, ef_construction=16, ef_search=8, ef_max=16)
    index = VectorIndex(64, "hash:64", params)
    index.rebuild(rows_of(vectors), 1)
    assert index.calibration is not None and not index.calibration.accepted
    assert index.hnsw is None  # searches stay exact
    q = vectors[0]
    got = [r for r, _ in top_rows(index, q, None, 10)]
    assert got == [int(i) + 1 for i in np.argsort(-(vectors @ q))[:10]]  # exact results
    # Not retried on every catch-up: only once the index has grown by a tenth.
    assert not index.needs_compaction() and index.calibration.vectors == 3000
    more = spread(299, 64, seed=5)
    grown = VectorRows(np.arange(299, dtype=np.int64) + 10_000, [f"n{i}" for i in range(299)],
                       np.full(299, 3, np.int32), more)
    index.apply_changes([f"n{i}" for i in range(299)], grown, 2)
    assert len(index) == 3299 and not index.needs_compaction()
    index.apply_changes(["last"], VectorRows(np.array([20_000]), ["last"], np.array([3]),
                                             spread(1, 64, seed=6)), 3)
    assert len(index) == 3300 and index.needs_compaction()  # 10 % more: measure again
    index.save(tmp_path / "v")
    loaded = VectorIndex.load(tmp_path / "v", params)
    assert loaded is not None and loaded.calibration == index.calibration
    assert loaded.needs_compaction()  # the count that was calibrated survives a reload


def test_an_accepted_graph_records_its_beam_and_uses_it(tmp_path: Path) -> None:
    vectors = clustered(3000, 32, seed=3)
    params = HnswParams(threshold=1000, ef_search=32)
    index = VectorIndex(32, "m", params)
    index.rebuild(rows_of(vectors), 1)
    assert index.hnsw is not None and index.calibration is not None
    assert index.calibration.accepted and index.ef_search == index.calibration.ef_search
    assert index.calibration.recall_at_10 >= 0.95
    index.save(tmp_path / "v")
    loaded = VectorIndex.load(tmp_path / "v", params)
    assert loaded is not None and loaded.hnsw is not None
    assert loaded.calibration == index.calibration and loaded.ef_search == index.ef_search


def test_single_query_search_restores_the_openmp_thread_count() -> None:
    from glassrag.vectors.index import one_omp_thread

    faiss.omp_set_num_threads(2)
    with one_omp_thread():
        assert faiss.omp_get_max_threads() == 1
    assert faiss.omp_get_max_threads() == 2
    with pytest.raises(RuntimeError), one_omp_thread():
        raise RuntimeError("a failing search still restores the count")
    assert faiss.omp_get_max_threads() == 2
