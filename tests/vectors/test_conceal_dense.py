"""Dense search under ``conceal`` scans the readable rows exactly, graph or not.

An HNSW graph is built over every row, hidden ones included, and whether a filtered search
uses it depends on how many rows are hidden (globally and near the query). So the readable
top-k a non-admin gets could change when hidden documents are added; the exact scan's
cannot.
"""

from __future__ import annotations

import numpy as np

from glassrag.vectors.index import HnswParams, VectorIndex
from vector_fixtures import TEN, clustered_rows


def _top(index: VectorIndex, q: np.ndarray, exact: bool) -> list[int]:
    return [m.rowid for m in index.search(q, {TEN}, 10, exact=exact)[0]]


def test_exact_search_ignores_the_graph() -> None:
    rows, queries = clustered_rows(8_000, 48)
    scan = VectorIndex(48, "m", HnswParams(threshold=10**9))
    scan.rebuild(rows, 1)
    # The graph forced onto a 10 % filter misses true neighbours (see test_vectors).
    graph = VectorIndex(48, "m", HnswParams(threshold=1000, exact_fraction=0.0, ef_max=128))
    graph.rebuild(rows, 1)
    assert graph.hnsw is not None
    truth = [_top(scan, q, exact=False) for q in queries]
    assert [_top(graph, q, exact=False) for q in queries] != truth
    assert [_top(graph, q, exact=True) for q in queries] == truth
