"""Combining rankings from several retrievers (hybrid search).

* :func:`weighted` -- a weighted sum of per-retriever scores, each normalised between the
  retriever's best score and a floor; the default. Unlike ranks, the normalised scores keep
  how far ahead a retriever's best hits are, and it beat RRF on every BEIR set measured
  (``benchmarks/RESULTS.md``). The floor is a quantile of the retriever's own candidate
  scores (``[dense] fusion_floor``): at 0 it is the lowest (min-max); higher, the candidates
  under it count nothing. An embedder whose cosines crowd into a narrow band (e5: 0.80-0.93)
  otherwise gives its fortieth candidate nearly the marks of its first.
* :func:`rrf` -- reciprocal rank fusion (Cormack et al. 2009): ``sum 1 / (k + rank)``. Uses
  ranks only, so BM25 and cosine scores need no calibration.

Ties are broken by first appearance (the order of the retrievers, then rank), so fusion is
deterministic. :func:`fuse` is the one fusion of best-first lists that hybrid search and the
query rewrite both use: it applies either method and keeps every list's score and rank of
each fused key for ``inspect`` and the trace.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from glassrag.errors import InvalidInput
from glassrag.records import Fusion

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
             weights: Mapping[str, float], floor: float = 0.0) -> list[tuple[Key, float]]:
    """Weighted sum of normalised scores; a key a retriever did not return gets 0.

    Each retriever's scores are normalised to [0, 1] between its best score and the score
    at quantile ``floor`` of its own (0.0: its lowest, min-max); a score under that counts
    0. A score equal to the best normalises to 1.0 even when the floor is the best too.
    Every retriever needs a non-negative weight.
    """
    if not 0.0 <= floor < 1.0:
        raise InvalidInput(f"the fusion floor must be in [0, 1), got {floor}",
                           field="fusion_floor")
    fused: dict[Key, float] = {}
    for name, table in scores.items():
        if name not in weights:
            raise InvalidInput(f"no fusion weight for retriever {name!r}", field="weights")
        weight = float(weights[name])
        if weight < 0:
            raise InvalidInput(f"fusion weight for {name!r} is negative", field="weights")
        if not table:
            continue
        low, high = quantile_floor(table.values(), floor), max(table.values())
        span = high - low
        for key, score in table.items():
            norm = max((score - low) / span, 0.0) if span > 0 else float(score >= high)
            fused[key] = fused.get(key, 0.0) + weight * norm
    return _sorted(fused)


def quantile_floor(values: Iterable[float], floor: float) -> float:
    """The score at quantile ``floor`` of ``values`` (nearest rank below): of 50 candidates,
    0.7 gives the 16th best, 0.0 the lowest."""
    ordered = sorted(values)
    return ordered[int((len(ordered) - 1) * floor)]


def _sorted(fused: dict[Key, float]) -> list[tuple[Key, float]]:
    # dicts keep insertion order and sorted() is stable: equal scores stay first-seen first.
    return sorted(fused.items(), key=lambda item: -item[1])



@dataclass(frozen=True)
class Fused(Generic[Key]):
    """One key of a fused ranking: its fused score and rank (from 1), and its score and rank
    in each input list that holds it."""

    key: Key
    score: float
    rank: int
    scores: dict[str, float]
    ranks: dict[str, int]


def fuse(lists: Mapping[str, Sequence[tuple[Key, float]]], method: str = Fusion.RRF, *,
         k: int = RRF_K, weights: Mapping[str, float] | None = None,
         limit: int | None = None, floor: float = 0.0) -> list[Fused[Key]]:
    """Fuse best-first ``(key, score)`` lists, named by retriever, into one best-first list
    of at most ``limit`` keys.

    ``method`` is ``rrf`` (with ``k``) or ``weighted`` (with ``weights`` per list name; None
    weighs every list 1.0; and the normalisation ``floor``, see :func:`weighted`). A single
    list is its own ranking: nothing is fused and its scores are kept as they are.
    """
    if method not in tuple(Fusion):
        raise InvalidInput(f"unknown fusion {method!r}; use rrf or weighted", field="fusion")
    if not any(lists.values()):
        return []
    if len(lists) == 1:
        # One list is its own ranking (every BM25 search): only the kept keys are built.
        [(name, ranked)] = lists.items()
        return [Fused(key, score, rank, {name: score}, {name: rank})
                for rank, (key, score) in enumerate(ranked[:limit], start=1)]
    scores = {name: {key: score for key, score in ranked} for name, ranked in lists.items()}
    ranks = {name: {key: r for r, (key, _) in enumerate(ranked, start=1)}
             for name, ranked in lists.items()}
    fused: list[tuple[Key, float]]
    if method == Fusion.WEIGHTED:
        fused = weighted(scores, weights if weights is not None else dict.fromkeys(lists, 1.0),
                         floor)
    else:
        fused = rrf({name: [key for key, _ in ranked] for name, ranked in lists.items()}, k)
    return [
        Fused(key, score, rank, {n: scores[n][key] for n in lists if key in scores[n]},
              {n: ranks[n][key] for n in lists if key in ranks[n]})
        for rank, (key, score) in enumerate(fused[:limit], start=1)
    ]
