"""Building the HNSW graph and measuring, against an exact scan, what it finds.

HNSW recall depends on the data: all-MiniLM-L6-v2 vectors of real text cluster and a graph
finds nearly all true neighbours at a modest beam, while feature-hashed (``hash:``) vectors
are close to uniformly spread and the same graph misses a fifth of them. So a graph is not
trusted blindly: :func:`calibrate` compares it with an exact scan on sample queries, widens
the search beam until recall@10 reaches the target, and reports failure when even the widest
beam does not -- the index then stays exact (see ``VectorIndex``).

The best sample queries are real questions (the knowledge base's recorded ones, when it has
enough). Without them, stored vectors stand in, each excluding itself -- but they sit on the
data while questions fall between documents, and on real text they missed 4-6 times fewer
true neighbours than real questions did at the same beam (``benchmarks/RESULTS.md``). So a
stand-in sample must miss at most a fifth of what the target allows (0.99 for 0.95).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

CALIBRATION_SAMPLE = 200
# Fewer recorded questions than this: calibrate on stored vectors instead.
MIN_QUESTIONS = 50
# Stored vectors as queries missed 4-6x fewer neighbours than real questions (see above).
STAND_IN_MISS_FACTOR = 5.0
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
    queries: str = "stored vectors"  # or "questions": what the sample was
    required: float = 0.0  # the recall the sample had to reach (stricter for stand-ins)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        return cls(int(data["ef_search"]), float(data["recall_at_10"]), float(data["target"]),
                   int(data["sample"]), bool(data["accepted"]), int(data.get("vectors", 0)),
                   str(data.get("queries", "stored vectors")),
                   float(data.get("required", data["target"])))


def build_graph(faiss: Any, vectors: np.ndarray, m: int, ef_construction: int) -> Any:
    graph = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = ef_construction
    graph.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return graph


def sample_positions(n: int, size: int = CALIBRATION_SAMPLE) -> np.ndarray:
    # A fixed seed: the same vectors always calibrate the same way (reproducible builds).
    return np.sort(np.random.default_rng(0).choice(n, min(size, n), replace=False))


def exact_kth_scores(vectors: np.ndarray, queries: np.ndarray,
                     exclude: np.ndarray | None = None, k: int = _K) -> np.ndarray:
    """For each query, the k-th best inner product with any stored row -- other than row
    ``exclude[i]`` for query ``i`` when given (a stored vector used as a query)."""
    out = np.empty(queries.shape[0], np.float32)
    for start in range(0, queries.shape[0], _BATCH):
        scores = vectors @ queries[start : start + _BATCH].T  # one pass over the matrix
        if exclude is not None:
            batch = exclude[start : start + _BATCH]
            scores[batch, np.arange(batch.size)] = -np.inf
        out[start : start + scores.shape[1]] = -np.partition(-scores, k - 1, axis=0)[k - 1]
    return out


def graph_recall(faiss: Any, graph: Any, queries: np.ndarray, exclude: np.ndarray | None,
                 kth: np.ndarray, ef: int, k: int = _K) -> float:
    """Share of the graph's top-k (the query's own row excluded, for stored vectors) that
    score at least the exact k-th best.

    Judging by score rather than by id counts a tie (a duplicate vector) as found.
    """
    params = faiss.SearchParametersHNSW()
    params.efSearch = max(ef, k + 1)
    scores, found = graph.search(np.ascontiguousarray(queries, np.float32), k + 1,
                                 params=params)
    hits = 0
    for row in range(queries.shape[0]):
        keep = found[row] >= 0
        if exclude is not None:
            keep &= found[row] != exclude[row]
        got = scores[row][keep][:k]
        hits += int(np.count_nonzero(got >= kth[row] - 1e-5))
    return hits / (k * queries.shape[0])


def calibrate(faiss: Any, graph: Any, vectors: np.ndarray, ef_start: int, ef_max: int,
              target: float, questions: np.ndarray | None = None) -> Calibration:
    """Smallest beam (``ef_start`` doubled up to ``ef_max``) whose recall@10 meets ``target``
    on ``questions`` (unit vectors of real questions), or, with fewer than
    :data:`MIN_QUESTIONS` of them, meets the stricter stand-in bar on stored vectors."""
    if questions is not None and questions.shape[0] >= MIN_QUESTIONS:
        queries = np.ascontiguousarray(questions[:CALIBRATION_SAMPLE], np.float32)
        exclude, kind, required = None, "questions", target
        kth = exact_kth_scores(vectors, queries)
    else:
        exclude = sample_positions(vectors.shape[0])
        queries = np.ascontiguousarray(vectors[exclude], np.float32)
        kind, required = "stored vectors", 1.0 - (1.0 - target) / STAND_IN_MISS_FACTOR
        if exclude.size <= _K:
            return Calibration(ef_start, 1.0, target, int(exclude.size), True,
                               vectors.shape[0], kind, required)
        kth = exact_kth_scores(vectors, queries, exclude)
    ef = ef_start
    while True:
        recall = graph_recall(faiss, graph, queries, exclude, kth, ef)
        if recall >= required or ef >= ef_max:
            return Calibration(ef, round(recall, 4), target, int(queries.shape[0]),
                               recall >= required, vectors.shape[0], kind, round(required, 4))
        ef = min(ef * 2, ef_max)
