"""Vector rows clustered by role, for filtered-search recall tests."""

from __future__ import annotations

import numpy as np

from glassrag.vectors.index import VectorRows

# Role codes of the clustered rows (see clustered_rows).
TEN, FORTY, REST = 1, 2, 3



def clustered_rows(n: int, dim: int, seed: int = 0) -> tuple[VectorRows, np.ndarray]:
    """Clustered vectors whose roles follow the cluster (a department writes about its own
    topics): the case where a filter removes the query's whole neighbourhood and filtered
    HNSW alone loses recall."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((100, dim)).astype(np.float32)
    label = rng.integers(0, len(centers), n)
    vectors = centers[label] + 0.7 * rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    share = rng.random(len(centers))[label]  # one draw per cluster
    sets = np.where(share < 0.1, TEN, np.where(share < 0.5, FORTY, REST))
    queries = centers[rng.integers(0, len(centers), 60)]
    queries = queries + 0.7 * rng.standard_normal(queries.shape).astype(np.float32)
    return VectorRows(np.arange(n, dtype=np.int64), [f"d{i}" for i in range(n)], sets,
                      vectors), queries
