"""Rerankers: the model-free coverage reranker by hand, the CrossEncoder on the bundled model."""

from __future__ import annotations

import math
import sys

import pytest

import dense_fixtures
from glassrag.errors import MissingExtra
from glassrag.records import Chunk, Hit
from glassrag.retrieval.rerank import CrossEncoderReranker, LexicalCoverageReranker

minilm_path = dense_fixtures.minilm_path  # a fixture; skips when the model is missing


def hit(text: str, rank: int, chunk_id: str | None = None) -> Hit:
    chunk = Chunk(chunk_id=chunk_id or f"d{rank}#1", doc_id=f"d{rank}", ordinal=1, text=text,
                  line_start=1, line_end=1, char_start=0, char_end=len(text), heading=None,
                  roles=("public",), doc_version=1, content_hash="h")
    return Hit(chunk=chunk, score=1.0 / rank, scores={"bm25": 1.0 / rank}, ranks={"bm25": rank})


def test_coverage_hand_checked() -> None:
    hits = [hit("The policy covers many things", 1), hit("Refund within 14 days", 2),
            hit("Days off", 3)]
    out = LexicalCoverageReranker().rerank("refund policy days", hits)
    # Terms refund, polici, day; candidate df 1, 1, 2 of N=3 -> weights w1, w1, w2.
    w1, w2 = math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5)
    total = 2 * w1 + w2
    assert [h.chunk.chunk_id for h in out] == ["d2#1", "d1#1", "d3#1"]
    assert [h.score for h in out] == pytest.approx([(w1 + w2) / total, w1 / total, w2 / total])
    assert out[0].scores == {"bm25": 0.5, "rerank": out[0].score}
    assert out[0].ranks == {"bm25": 2, "rerank": 1}


def test_coverage_ties_keep_the_incoming_order_and_weights_override() -> None:
    hits = [hit("nothing relevant", 1), hit("refund", 2), hit("refund", 3)]
    out = LexicalCoverageReranker().rerank("refund", hits)
    assert [h.chunk.chunk_id for h in out] == ["d2#1", "d3#1", "d1#1"]
    weighted = LexicalCoverageReranker({"refund": 1.0, "day": 3.0})
    out = weighted.rerank("refund days", [hit("refund", 1), hit("three days", 2)])
    assert [(h.chunk.chunk_id, h.score) for h in out] == [("d2#1", 0.75), ("d1#1", 0.25)]
    # A query of stop words only: order unchanged, every rerank score 0.
    out = weighted.rerank("the of and", hits)
    assert [h.chunk.chunk_id for h in out] == ["d1#1", "d2#1", "d3#1"]
    assert {h.scores["rerank"] for h in out} == {0.0}
    assert weighted.rerank("refund", []) == []


def test_cross_encoder_needs_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    reranker = CrossEncoderReranker("/nowhere")  # construction loads nothing
    with pytest.raises(MissingExtra, match=r"pip install 'glassrag\[dense\]'"):
        reranker.rerank("q", [hit("text", 1)])


@pytest.mark.model
def test_cross_encoder_reorders_by_its_scores(minilm_path: str) -> None:
    # No cross-encoder ships offline; the bundled bi-encoder loaded as a CrossEncoder (with
    # a fresh classification head) exercises the loading and plumbing, not ranking quality.
    reranker = CrossEncoderReranker(minilm_path, max_length=128)
    hits = [hit("Refunds are paid within 14 days.", 1), hit("Lunch is at noon.", 2),
            hit("Passwords rotate yearly.", 3)]
    out = reranker.rerank("How do I get my money back?", hits)
    assert sorted(h.chunk.chunk_id for h in out) == ["d1#1", "d2#1", "d3#1"]
    scores = [h.scores["rerank"] for h in out]
    assert scores == sorted(scores, reverse=True)
    assert [h.ranks["rerank"] for h in out] == [1, 2, 3]
    assert all("bm25" in h.ranks for h in out)


@pytest.mark.model
def test_a_cross_encoder_is_loaded_once_per_path(minilm_path: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import sentence_transformers

    from glassrag.retrieval import rerank
    from glassrag.retrieval.search import Retrieval, _reranked

    loads: list[str] = []
    real = sentence_transformers.CrossEncoder

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, path: str, **options: object) -> None:
            loads.append(path)
            super().__init__(path, **options)

    monkeypatch.setattr(sentence_transformers, "CrossEncoder", Counting)
    rerank.cross_encoder.cache_clear()
    hits = [hit("Refunds are paid within 14 days.", 1), hit("Lunch is at noon.", 2)]
    for question in ("money back?", "when is lunch?", "refund time"):
        found = _reranked(Retrieval("bm25", ["x"], hits, 0, []), question,
                          f"cross:{minilm_path}", 2)
        assert sorted(h.chunk.chunk_id for h in found.hits) == ["d1#1", "d2#1"]
    assert loads == [minilm_path]  # one load for three questions
    rerank.cross_encoder.cache_clear()
