"""IR metrics: hand-checked values, and a differential test against trec_eval (through
ir-measures / pytrec_eval-terrier) on random runs, ties and BEIR's identical-id rule."""

from __future__ import annotations

import math
import random

import pytest

from glassrag.eval.metrics import evaluate, ndcg_at_k, per_query, ranking


def test_hand_checked_values() -> None:
    qrels = {"q1": {"d1": 2, "d2": 1, "d9": 0}}
    run = {"q1": {"d3": 0.9, "d2": 0.8, "d1": 0.1, "q1": 5.0}}
    # q1 itself is dropped (BEIR); ranking d3, d2, d1.
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    got = evaluate(qrels, run, ndcg_k=10, recall_k=2, mrr_k=10)
    assert got == {"ndcg@10": pytest.approx(dcg / idcg), "recall@2": 0.5, "mrr@10": 0.5}
    # Without the BEIR rule the query's own id takes rank 1.
    assert ranking(run["q1"], "q1", ignore_identical_ids=False)[0] == "q1"
    assert ndcg_at_k({"d1": 0}, ["d1"], 10) == 0.0


def test_ties_are_broken_by_doc_id_descending() -> None:
    assert ranking({"a": 1.0, "c": 1.0, "b": 2.0, "d": 1.0}) == ["b", "d", "c", "a"]


def test_missing_queries_score_zero() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    got = evaluate(qrels, {"q1": {"d1": 1.0}})
    assert got["ndcg@10"] == 0.5 and got["mrr@10"] == 0.5
    with pytest.raises(ValueError, match="unknown metric"):
        per_query(qrels, {}, "map", 10)


def random_case(seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        qid = f"q{q}"
        docs = [f"d{rng.randrange(300)}" for _ in range(rng.randrange(1, 8))]
        qrels[qid] = {d: rng.choice([1, 1, 2, 3]) for d in docs}
        if q % 10 == 0:
            qrels[qid][f"d{rng.randrange(300)}"] = 0  # judged non-relevant
        pool = [f"d{rng.randrange(300)}" for _ in range(rng.randrange(5, 150))] + docs[:2]
        # Scores rounded to one decimal: many ties, which trec_eval breaks by doc id.
        run[qid] = {d: round(rng.random(), 1) for d in pool}
        if q % 4 == 0:
            run[qid][qid] = 2.0  # the query's own id at rank 1; BEIR drops it
    return qrels, run


@pytest.mark.parametrize("seed", range(5))
def test_matches_trec_eval(seed: int) -> None:
    ir_measures = pytest.importorskip("ir_measures", reason="ir-measures is not installed")
    # trec_eval itself (what BEIR calls): ir-measures would otherwise pick its msmarco
    # provider for RR@10, which breaks score ties by input order instead of doc id.
    trec_eval = ir_measures.providers.registry["pytrec_eval"]
    qrels, run = random_case(seed)
    reference_run = {q: {d: s for d, s in docs.items() if d != q} for q, docs in run.items()}
    # trec_eval's recip_rank has no cut-off: RR@10 is its value where the first relevant
    # document is within rank 10 (value >= 1/10), else 0.
    measures = {"ndcg": ir_measures.nDCG @ 10, "recall": ir_measures.R @ 100,
                "mrr": ir_measures.RR}
    for name, measure in measures.items():
        want = {m.query_id: m.value
                for m in trec_eval.iter_calc([measure], qrels, reference_run)}
        if name == "mrr":
            want = {q: v if v >= 0.1 - 1e-12 else 0.0 for q, v in want.items()}
        k = 100 if name == "recall" else 10
        got = per_query(qrels, run, name, k)
        assert set(want) == set(got)
        for qid in want:
            assert got[qid] == pytest.approx(want[qid], abs=1e-9), (name, qid)
        mean = evaluate(qrels, run)[f"{name}@{k}"]
        assert mean == pytest.approx(sum(want.values()) / len(qrels))
        if name != "mrr":
            assert mean == pytest.approx(trec_eval.calc_aggregate([measure], qrels,
                                                                  reference_run)[measure])
