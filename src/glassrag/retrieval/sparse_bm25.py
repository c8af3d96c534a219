"""BM25 as sparse vectors: glassrag's analyzer terms, weighted for a dot-product engine.

BM25 of a chunk is ``sum over query terms t of idf(t) * tf_part(t)``. The ``tf_part``
(term frequency saturated by ``k1`` and normalised by the chunk's length against the average
``avgdl``) depends on the chunk alone once ``avgdl`` is fixed, so it is stored as the chunk's
vector value for ``t``. The ``idf`` part depends on the collection and is applied at query
time by the engine (Qdrant's ``Modifier.IDF`` uses Lucene's formula, the one Tantivy and
:mod:`glassrag.retrieval.readable_bm25` use). A query is a vector of 1.0 per distinct term,
so the dot product is BM25 with ``k1``, ``b`` and IDF exactly as the embedded index has them.

Terms become dimensions through a stable 32-bit hash (sparse indices are unsigned 32-bit
integers). Two distinct terms sharing a dimension merge their weights and document
frequencies; with ``V`` distinct terms about ``V**2 / 2**33`` pairs do (0.1 for SciFact's
~30k, ~120 at a million). ``matched_terms`` never relies on the hash: it is read from the
chunk's stored tokens.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence

from glassrag.retrieval.readable_bm25 import K1, B


def term_index(term: str) -> int:
    """The sparse dimension of an analysed term (stable across processes and machines)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


def tf_part(tf: int, length: int, avgdl: float) -> float:
    """BM25's term-frequency factor with Lucene's ``(k1 + 1)`` scale and length norm."""
    norm = K1 * (1.0 - B + B * length / avgdl)
    return tf * (K1 + 1.0) / (tf + norm)


def chunk_vector(tokens: Sequence[str], avgdl: float) -> tuple[list[int], list[float]]:
    """(indices, values) of a chunk from its analysed tokens (in order, repeats kept)."""
    weights: dict[int, float] = {}
    for term, tf in Counter(tokens).items():
        index = term_index(term)
        weights[index] = weights.get(index, 0.0) + tf_part(tf, len(tokens), avgdl)
    return list(weights), list(weights.values())


def query_vector(terms: Iterable[str]) -> tuple[list[int], list[float]]:
    """(indices, values) of a query: 1.0 for each distinct dimension of ``terms``."""
    indices = list(dict.fromkeys(term_index(t) for t in terms))
    return indices, [1.0] * len(indices)


def mean_length(token_strings: Iterable[str]) -> tuple[int, float]:
    """(chunks, average tokens per chunk) over stored, space-separated token strings."""
    chunks = tokens = 0
    for text in token_strings:
        chunks += 1
        tokens += len(text.split())
    return chunks, (tokens / chunks if chunks else 0.0)
