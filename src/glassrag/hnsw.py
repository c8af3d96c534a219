"""Building the HNSW graph and measuring, on the knowledge base's own vectors, what it finds.

HNSW recall depends on the data: all-MiniLM-L6-v2 vectors of real text cluster and a graph
finds nearly all true neighbours at a modest beam, while feature-hashed (``hash:``) vectors
are close to uniformly spread and the same graph misses a fifth of them. So a graph is not
trusted blindly: :func:`calibrate` compares it with an exact scan for a sample of stored
vectors used as queries (each excluding itself, so it behaves like a new query near the
data), widens the search beam until recall@10 reaches the target, and reports failure when
even the widest beam does not -- the index then stays exact (see ``VectorIndex``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

CALIBRATION_SAMPLE = 200
_K = 10
_BATCH = 32


@dataclass(frozen=True)
class Calibration:
    """What the build measured: the beam chosen and the recall@10 it reached."""

    ef_search: int
    recall_at_10: float
    target: float
    sample: int
    accepted: bool
    vectors: int  # how many the graph held: a rejected graph is retried after growth

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        return cls(int(data["ef_search"]), float(data["recall_at_10"]), float(data["target"]),
                   int(data["sample"]), bool(data["accepted"]), int(data.get("vectors", 0)))


def build_graph(faiss: Any, vectors: np.ndarray, m: int, ef_construction: int) -> Any:
    graph = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = ef_construction
    graph.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return graph


def sample_positions(n: int, size: int = CALIBRATION_SAMPLE) -> np.ndarray:
    # A fixed seed: the same vectors always calibrate the same way (reproducible builds).
    return np.sort(np.random.default_rng(0).choice(n, min(size, n), replace=False))


def exact_kth_scores(vectors: np.ndarray, positions: np.ndarray, k: int = _K) -> np.ndarray:
    """For each sampled row, the k-th best inner product with any *other* row."""
    out = np.empty(positions.size, np.float32)
    for start in range(0, positions.size, _BATCH):
        batch = positions[start : start + _BATCH]
        scores = vectors @ vectors[batch].T  # (n, batch); one pass over the matrix per batch
        scores[batch, np.arange(batch.size)] = -np.inf
        out[start : start + batch.size] = -np.partition(-scores, k - 1, axis=0)[k - 1]
    return out


def graph_recall(faiss: Any, graph: Any, vectors: np.ndarray, positions: np.ndarray,
                 kth: np.ndarray, ef: int, k: int = _K) -> float:
    """Share of the graph's top-k (self excluded) that score at least the exact k-th best.

    Judging by score rather than by id counts a tie (a duplicate vector) as found.
    """
    params = faiss.SearchParametersHNSW()
    params.efSearch = max(ef, k + 1)
    scores, found = graph.search(np.ascontiguousarray(vectors[positions], np.float32), k + 1,
                                 params=params)
    hits = 0
    for row, pos in enumerate(positions):
        keep = (found[row] >= 0) & (found[row] != pos)
        got = scores[row][keep][:k]
        hits += int(np.count_nonzero(got >= kth[row] - 1e-5))
    return hits / (k * positions.size)


def calibrate(faiss: Any, graph: Any, vectors: np.ndarray, ef_start: int, ef_max: int,
              target: float) -> Calibration:
    """Smallest beam (``ef_start`` doubled up to ``ef_max``) whose recall@10 meets ``target``."""
    positions = sample_positions(vectors.shape[0])
    if positions.size <= _K:
        return Calibration(ef_start, 1.0, target, int(positions.size), True, vectors.shape[0])
    kth = exact_kth_scores(vectors, positions)
    ef = ef_start
    while True:
        recall = graph_recall(faiss, graph, vectors, positions, kth, ef)
        if recall >= target or ef >= ef_max:
            return Calibration(ef, round(recall, 4), target, int(positions.size),
                               recall >= target, vectors.shape[0])
        ef = min(ef * 2, ef_max)
