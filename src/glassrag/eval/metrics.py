"""Retrieval quality metrics: nDCG@k, recall@k and MRR@k, as BEIR reports them.

Inputs use the TREC/BEIR shapes: ``qrels = {query_id: {doc_id: grade}}`` and
``run = {query_id: {doc_id: score}}``. Conventions follow trec_eval (which BEIR calls through
pytrec_eval), and the tests check the values against it:

* a run is ranked by score descending, ties broken by doc_id *descending* (trec_eval's order);
* a document is relevant when its grade is > 0; nDCG uses the grade itself as the gain
  and ``log2(rank + 1)`` as the discount, with the ideal ranking taken from the qrels;
* BEIR's convention, on by default: a retrieved document whose id equals the query id is
  dropped before scoring (in BEIR's own corpora a query can be a corpus document too);
* the mean is taken over the queries of the qrels; a query missing from the run scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]


def ranking(scores: Mapping[str, float], query_id: str | None = None,
            ignore_identical_ids: bool = True) -> list[str]:
    """Doc ids best first in trec_eval order, without the query's own id (BEIR)."""
    items = [(d, s) for d, s in scores.items()
             if not (ignore_identical_ids and query_id is not None and d == query_id)]
    # Two stable sorts: doc_id descending first, then score descending on top of it.
    items.sort(key=lambda item: item[0], reverse=True)
    items.sort(key=lambda item: item[1], reverse=True)
    return [d for d, _ in items]


def ndcg_at_k(judged: Mapping[str, int], ranked: list[str], k: int) -> float:
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    if idcg == 0:
        return 0.0
    dcg = sum(max(judged.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    return dcg / idcg


def recall_at_k(judged: Mapping[str, int], ranked: list[str], k: int) -> float:
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(judged: Mapping[str, int], ranked: list[str], k: int) -> float:
    for i, d in enumerate(ranked[:k]):
        if judged.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


_METRICS = {"ndcg": ndcg_at_k, "recall": recall_at_k, "mrr": mrr_at_k}


def per_query(qrels: Qrels, run: Run, metric: str, k: int,
              ignore_identical_ids: bool = True) -> dict[str, float]:
    """``{query_id: value}`` of ``metric`` (ndcg, recall or mrr) at ``k`` for every qrels query."""
    try:
        fn = _METRICS[metric]
    except KeyError:
        raise ValueError(f"unknown metric {metric!r}; use one of {sorted(_METRICS)}") from None
    return {
        qid: fn(judged, ranking(run.get(qid, {}), qid, ignore_identical_ids), k)
        for qid, judged in qrels.items()
    }


def evaluate(qrels: Qrels, run: Run, ndcg_k: int = 10, recall_k: int = 100, mrr_k: int = 10,
             ignore_identical_ids: bool = True) -> dict[str, float]:
    """Mean ``ndcg@10``, ``recall@100`` and ``mrr@10`` (the cut-offs are parameters)."""
    out = {}
    for metric, k in (("ndcg", ndcg_k), ("recall", recall_k), ("mrr", mrr_k)):
        values = per_query(qrels, run, metric, k, ignore_identical_ids)
        out[f"{metric}@{k}"] = sum(values.values()) / len(values) if values else 0.0
    return out
