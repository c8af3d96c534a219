"""Combining rankings from several retrievers (hybrid search).

* :func:`weighted` -- a weighted sum of per-retriever scores after min-max normalisation; the
  default. Unlike ranks, the normalised scores keep how far ahead a retriever's best hits
  are, and it beat RRF on every BEIR set measured (``benchmarks/RESULTS.md``).
* :func:`rrf` -- reciprocal rank fusion (Cormack et al. 2009): ``sum 1 / (k + rank)``. Uses
  ranks only, so BM25 and cosine scores need no calibration.

Ties are broken by first appearance (the order of the retrievers, then rank), so fusion is
deterministic. :func:`fuse_hits` applies either to ``Hit`` lists and keeps every
retriever's score and rank on the fused hit for ``inspect``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from glassrag.errors import InvalidInput
from glassrag.records import Hit

Key = TypeVar("Key", bound=Hashable)
RRF_K = 60


def rrf(rankings: Mapping[str, Sequence[Key]], k: int = RRF_K) -> list[tuple[Key, float]]:
    """Reciprocal rank fusion of best-first rankings; ranks start at 1."""
    if k < 0:
        raise InvalidInput(f"rrf k must be >= 0, got {k}", field="rrf_k")
    fused: dict[Key, float] = {}
    for ranking in rankings.values():
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return _sorted(fused)


def weighted(scores: Mapping[str, Mapping[Key, float]],
             weights: Mapping[str, float]) -> list[tuple[Key, float]]:
    """Weighted sum of min-max normalised scores; a key a retriever did not return gets 0.

    A retriever whose scores are all equal normalises them to 1.0 (each is its best).
    Every retriever needs a non-negative weight.
    """
    fused: dict[Key, float] = {}
    for name, table in scores.items():
        if name not in weights:
            raise InvalidInput(f"no fusion weight for retriever {name!r}", field="weights")
        weight = float(weights[name])
        if weight < 0:
            raise InvalidInput(f"fusion weight for {name!r} is negative", field="weights")
        if not table:
            continue
        low, high = min(table.values()), max(table.values())
        span = high - low
        for key, score in table.items():
            norm = (score - low) / span if span > 0 else 1.0
            fused[key] = fused.get(key, 0.0) + weight * norm
    return _sorted(fused)


def _sorted(fused: dict[Key, float]) -> list[tuple[Key, float]]:
    # dicts keep insertion order and sorted() is stable: equal scores stay first-seen first.
    return sorted(fused.items(), key=lambda item: -item[1])


def fuse_hits(per_retriever: Mapping[str, Sequence[Hit]], method: str = "rrf",
              k: int = RRF_K, weights: Mapping[str, float] | None = None) -> list[Hit]:
    """Fuse best-first hit lists into one, keyed by ``chunk_id``.

    The fused hit's ``score`` is the fusion score, also stored under ``scores[method]``
    with its rank under ``ranks[method]``; the per-retriever entries of every input hit are
    merged in, and ``matched_terms`` are united.
    """
    by_id: dict[str, Hit] = {}
    for hits in per_retriever.values():
        for hit in hits:
            seen = by_id.get(hit.chunk.chunk_id)
            if seen is None:
                by_id[hit.chunk.chunk_id] = hit
            else:
                terms = tuple(dict.fromkeys(seen.matched_terms + hit.matched_terms))
                by_id[hit.chunk.chunk_id] = dataclasses.replace(
                    seen, matched_terms=terms, scores={**seen.scores, **hit.scores},
                    ranks={**seen.ranks, **hit.ranks})
    if method == "rrf":
        fused = rrf({n: [h.chunk.chunk_id for h in hits] for n, hits in per_retriever.items()}, k)
    elif method == "weighted":
        fused = weighted({n: {h.chunk.chunk_id: h.score for h in hits}
                          for n, hits in per_retriever.items()},
                         weights if weights is not None else dict.fromkeys(per_retriever, 1.0))
    else:
        raise InvalidInput(f"unknown fusion {method!r}; use rrf or weighted", field="fusion")
    return [
        dataclasses.replace(by_id[key], score=score,
                            scores={**by_id[key].scores, method: score},
                            ranks={**by_id[key].ranks, method: rank})
        for rank, (key, score) in enumerate(fused, start=1)
    ]
