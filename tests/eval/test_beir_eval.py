"""BEIR retrieval evaluation: hand-checked metric values on a tiny synthetic set, BEIR's
identical-id rule, the bm25s tokenizer ablation, --compare plumbing and file errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import write_jsonl
from glassrag.errors import InputFileError, InvalidInput
from glassrag.eval.beir import (
    BeirReport,
    compare,
    parse_spec,
    run_beir,
    run_pair,
    table,
)
from glassrag.eval.beir_bm25s import bigram_terms, tokenize

CORPUS = [
    {"_id": "d1", "title": "Refund policy", "text": "Refunds are returned within five days."},
    {"_id": "d2", "title": "Shipping", "text": "Parcels ship by courier in two days."},
    {"_id": "d3", "title": "Warranty", "text": "The warranty covers defects for one year."},
    # A document whose id is also a query id, written to be that query's best match.
    {"_id": "q3", "title": "Warranty defects", "text": "Warranty defects: a warranty of defects."},
]
QUERIES = [
    {"_id": "q1", "text": "refunds returned"},           # d1 first: nDCG 1, MRR 1
    {"_id": "q2", "text": "parcels courier refunds"},    # d2 (2 terms) above d1 (1 term)
    {"_id": "q3", "text": "warranty defects"},           # own id first, then d3
    {"_id": "q4", "text": "not judged"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td1\t1\nq3\td3\t1\n"
RANK2 = 1 / math.log2(3)  # nDCG@10 of one relevant document found at rank 2


def make(root: Path, corpus: list[dict] = CORPUS, queries: list[dict] = QUERIES,
         qrels: str = QRELS) -> Path:
    write_jsonl(root / "corpus.jsonl", corpus)
    write_jsonl(root / "queries.jsonl", queries)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


@pytest.fixture
def beir_set(tmp_path: Path) -> Path:
    return make(tmp_path / "tiny")


def test_hand_checked_values(beir_set: Path) -> None:
    report = run_beir(beir_set)
    assert (report.dataset, report.n, report.docs, report.chunks) == ("tiny", 3, 4, 4)
    assert report.per_query["q1"] == 1.0
    assert list(report.run["q2"])[:2] == ["d2", "d1"]
    assert report.per_query["q2"] == pytest.approx(RANK2)
    # q3's own id ranked first and was dropped (BEIR), so d3 counts as rank 1.
    assert "q3" not in report.run["q3"]
    assert report.per_query["q3"] == 1.0
    assert report.metrics["ndcg@10"] == pytest.approx((1 + RANK2 + 1) / 3)
    assert report.metrics["mrr@10"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert report.metrics["recall@100"] == 1.0
    assert "q4" not in report.run  # unjudged queries are not asked
    assert report.mode == "bm25" and report.scorer == "glassrag"
    assert report.search_seconds > 0 and report.queries_per_second > 0


def test_identical_id_would_rank_first(tmp_path: Path) -> None:
    # The same set with the look-alike document renamed: now it is a real competitor.
    corpus = [dict(d, _id="x3") if d["_id"] == "q3" else d for d in CORPUS]
    report = run_beir(make(tmp_path / "renamed", corpus=corpus))
    assert list(report.run["q3"])[:2] == ["x3", "d3"]
    assert report.per_query["q3"] == pytest.approx(RANK2)


def test_matches_trec_eval(beir_set: Path) -> None:
    ir_measures = pytest.importorskip("ir_measures", reason="ir-measures is not installed")
    trec_eval = ir_measures.providers.registry["pytrec_eval"]
    report = run_beir(beir_set)
    qrels = {"q1": {"d1": 1}, "q2": {"d1": 1}, "q3": {"d3": 1}}
    got = trec_eval.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.R @ 100],
                                   qrels, report.run)
    assert report.metrics["ndcg@10"] == pytest.approx(got[ir_measures.nDCG @ 10])
    assert report.metrics["recall@100"] == pytest.approx(got[ir_measures.R @ 100])


def test_limit_top_k_and_report_shapes(beir_set: Path) -> None:
    report = run_beir(beir_set, limit=2, top_k=1)
    assert report.n == 2 and set(report.run) == {"q1", "q2"}
    assert all(len(docs) <= 1 for docs in report.run.values())
    assert report.per_query["q2"] == 0.0  # d1 is at rank 2, beyond top_k 1
    data = report.to_dict()
    assert "run" not in data and "per_query" not in data
    assert data["metrics"]["ndcg@10"] == pytest.approx(0.5, abs=1e-4)
    assert set(report.to_dict(per_query=True, run=True)) >= {"per_query", "run"}
    text = "\n".join(report.lines())
    assert "recall@100 here is recall@1" in text  # a shallow run says what its recall is
    assert "tiny (test: 2 queries, 4 docs, 4 chunks)" in text and "ndcg@10 0.5000" in text


def test_kept_kb_is_reused(beir_set: Path, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    first = run_beir(beir_set, kb_path=kb)
    again = run_beir(beir_set, kb_path=kb)
    assert first.ingest_seconds > 0 and again.ingest_seconds == 0.0  # not ingested twice
    assert again.metrics == first.metrics


def test_kb_with_other_documents_is_refused(beir_set: Path, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    run_beir(beir_set, kb_path=kb)
    with pytest.raises(InvalidInput, match="not in the corpus"):
        run_beir(make(tmp_path / "smaller", corpus=CORPUS[:3] + [
            {"_id": "d9", "title": "T", "text": "other"}]), kb_path=kb)


def test_dense_and_hybrid_with_hash_embedder(beir_set: Path, tmp_path: Path) -> None:
    first, second = run_pair(beir_set, {"mode": "dense", "embedder": "hash:64"},
                             {"mode": "hybrid", "embedder": "hash:64", "fusion": "weighted"})
    assert first.embedder == "hash:64" and first.embed_seconds > 0
    assert second.fusion == "weighted" and second.params["dense"]["fusion"] == "weighted"
    assert second.params["dense"]["min_score"] == -1.0  # no cosine cut-off in evaluation
    for report in (first, second):
        assert report.per_query["q1"] == 1.0
    lines = compare(first, second)
    assert lines[0] == "dataset: tiny (3 queries)"
    assert any(line.startswith("ndcg@10") and line.split()[-1].startswith(("+", "-"))
               for line in lines)
    assert "per query" in lines[-1]


def test_embedder_only_for_dense_and_hybrid(beir_set: Path, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    lexical = run_beir(beir_set, embedder="hash:64", kb_path=kb)
    assert lexical.embedder is None and lexical.embed_seconds == 0.0  # bm25 never embeds
    run_beir(beir_set, mode="dense", embedder="hash:64", kb_path=kb)
    recorded = run_beir(beir_set, mode="dense", kb_path=kb)  # the recorded embedder
    assert recorded.embedder == "hash:64" and recorded.per_query["q1"] == 1.0
    assert run_beir(beir_set, tokenizer="bigram", embedder="hash:64").scorer == "bm25s+bigram"


def test_rerank_lexical(beir_set: Path) -> None:
    report = run_beir(beir_set, rerank="lexical")
    assert report.rerank == "lexical" and report.per_query["q1"] == 1.0


def test_bm25s_scorer_and_tokenizers(tmp_path: Path) -> None:
    root = make(tmp_path / "zh", corpus=[
        {"_id": "z1", "title": "退款", "text": "退款将在五天内退回。"},
        {"_id": "z2", "title": "运输", "text": "包裹由快递在两天内送达。"},
    ], queries=[{"_id": "a", "text": "退款多久退回"}],
        qrels="query-id\tcorpus-id\tscore\na\tz1\t1\n")
    jieba = run_beir(root, tokenizer="jieba")
    bigram = run_beir(root, tokenizer="bigram", bm25={"k1": 1.5})
    assert jieba.scorer == "bm25s+analyzer" and bigram.scorer == "bm25s+bigram"
    assert bigram.params["k1"] == 1.5 and bigram.params["b"] == 0.75
    assert jieba.metrics["ndcg@10"] == bigram.metrics["ndcg@10"] == 1.0
    assert bigram_terms("检索增强 RAG, refunds 5天") == [
        "检索", "索增", "增强", "rag", "refund", "5", "天"]
    assert tokenize("检索增强", "analyzer") == ["检索", "增强"]
    with pytest.raises(InvalidInput, match="unknown tokenizer"):
        run_beir(root, tokenizer="whitespace")
    with pytest.raises(InvalidInput, match="bm25s scorer"):
        run_beir(root, tokenizer="bigram", mode="dense")
    with pytest.raises(InvalidInput, match="1.2/0.75"):
        run_beir(root, bm25={"k1": 0.9})


def test_parse_spec() -> None:
    assert parse_spec("hybrid") == {"mode": "hybrid"}
    assert parse_spec("bigram") == {"mode": "bm25", "tokenizer": "bigram"}
    assert parse_spec("dense, embedder=st:all-MiniLM-L6-v2") == {
        "mode": "dense", "embedder": "st:all-MiniLM-L6-v2"}
    assert parse_spec("hybrid,fusion=weighted,dense_weight=2,rrf_k=10") == {
        "mode": "hybrid", "fusion": "weighted", "dense": {"dense_weight": 2.0, "rrf_k": 10}}
    assert parse_spec("bm25,tokenizer=jieba,k1=0.9,b=0.4") == {
        "mode": "bm25", "tokenizer": "jieba", "bm25": {"k1": 0.9, "b": 0.4}}
    for bad in ("", "hybrid,weights", "hybrid,colour=red", "bm25,k1=high"):
        with pytest.raises(InvalidInput):
            parse_spec(bad)


def test_table_and_compare_different_sets() -> None:
    def fake(name: str, ndcg: float) -> BeirReport:
        return BeirReport(dataset=name, split="test", n=2, docs=5, chunks=5, mode="bm25",
                          embedder=None, scorer="glassrag",
                          metrics={"ndcg@10": ndcg, "recall@100": 1.0, "mrr@10": ndcg},
                          ingest_seconds=1.0, embed_seconds=0.0, search_seconds=0.5, top_k=100,
                          per_query={"a": ndcg, "b": 0.5})
    a, b = fake("one", 0.5), fake("two", 0.75)
    lines = compare(a, b)
    assert lines[0].startswith("datasets: one (2 queries) vs two")
    assert "+0.2500" in next(line for line in lines if line.startswith("ndcg@10"))
    assert lines[-1].endswith("better 1, worse 0, equal 1")
    rows = table([a, b])
    assert rows[2].startswith("| one | bm25 | 2 | 0.5000 | 1.0000 | 0.5000 | 4 |")


@pytest.mark.parametrize("missing, name", [
    ("corpus.jsonl", "corpus.jsonl"), ("queries.jsonl", "queries.jsonl"),
    ("qrels/test.tsv", "test.tsv")])
def test_missing_file_is_named(beir_set: Path, missing: str, name: str) -> None:
    (beir_set / missing).unlink()
    with pytest.raises(InputFileError, match=rf"{name}: not found"):
        run_beir(beir_set)


def test_bad_arguments(beir_set: Path, tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"qrels/dev.tsv: not found"):
        run_beir(beir_set, split="dev")
    with pytest.raises(InvalidInput, match="not a directory"):
        run_beir(tmp_path / "nowhere")
    with pytest.raises(InvalidInput, match="limit"):
        run_beir(beir_set, limit=0)
    with pytest.raises(InvalidInput, match="dense settings"):
        run_beir(beir_set, mode="hybrid", embedder="hash:64", dense={"rrf_k": 0})
