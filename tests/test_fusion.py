"""Fusion of rankings, checked against values worked out by hand."""

from __future__ import annotations

import pytest

from glassrag.errors import InvalidInput
from glassrag.records import Chunk, Hit
from glassrag.retrieval.fusion import fuse_hits, rrf, weighted


def test_rrf_hand_checked() -> None:
    fused = rrf({"bm25": ["a", "b", "c"], "dense": ["c", "a", "d"]}, k=60)
    # a: 1/61 + 1/62, c: 1/63 + 1/61, b: 1/62, d: 1/63
    assert [key for key, _ in fused] == ["a", "c", "b", "d"]
    assert [score for _, score in fused] == pytest.approx(
        [1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63])


def test_rrf_ties_keep_first_seen_order_and_k_matters() -> None:
    assert rrf({"x": ["p", "q"], "y": ["q", "p"]}, k=0) == [("p", 1.5), ("q", 1.5)]
    # With k=0 one first place beats two second places; with k=60 it does not.
    rankings = {"x": ["solo", "o", "pair"], "y": ["t", "u", "pair"]}
    assert rrf(rankings, k=0)[0] == ("solo", 1.0)  # pair: 1/3 + 1/3
    assert rrf(rankings, k=60)[0] == ("pair", pytest.approx(2 / 63))  # solo: 1/61
    assert rrf({}) == []
    with pytest.raises(InvalidInput):
        rrf({"x": ["a"]}, k=-1)


def test_weighted_min_max_hand_checked() -> None:
    scores = {"bm25": {"a": 10.0, "b": 5.0, "c": 0.0}, "dense": {"b": 0.9, "c": 0.5, "d": 0.1}}
    fused = weighted(scores, {"bm25": 0.5, "dense": 1.0})
    # bm25 -> a 1, b .5, c 0; dense -> b 1, c .5, d 0
    assert fused == [("b", pytest.approx(1.25)), ("a", pytest.approx(0.5)),
                     ("c", pytest.approx(0.5)), ("d", pytest.approx(0.0))]


def test_weighted_edge_cases() -> None:
    assert weighted({"x": {"a": 3.0, "b": 3.0}}, {"x": 2.0}) == [("a", 2.0), ("b", 2.0)]
    assert weighted({"x": {}}, {"x": 1.0}) == []
    with pytest.raises(InvalidInput, match="no fusion weight for retriever 'dense'"):
        weighted({"dense": {"a": 1.0}}, {"bm25": 1.0})
    with pytest.raises(InvalidInput, match="negative"):
        weighted({"x": {"a": 1.0}}, {"x": -1.0})


def chunk(chunk_id: str) -> Chunk:
    return Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], ordinal=1, text=chunk_id,
                 line_start=1, line_end=1, char_start=0, char_end=len(chunk_id), heading=None,
                 roles=("public",), doc_version=1, content_hash="h")


def hits(name: str, ids: list[str], terms: tuple[str, ...] = ()) -> list[Hit]:
    return [Hit(chunk=chunk(c), score=10.0 - r, matched_terms=terms,
                scores={name: 10.0 - r}, ranks={name: r})
            for r, c in enumerate(ids, start=1)]


def test_fuse_hits_keeps_every_retrievers_scores_and_ranks() -> None:
    fused = fuse_hits({"bm25": hits("bm25", ["a#1", "b#1"], ("refund",)),
                       "dense": hits("dense", ["b#1", "c#1"])})
    assert [h.chunk.chunk_id for h in fused] == ["b#1", "a#1", "c#1"]
    b = fused[0]
    assert b.ranks == {"bm25": 2, "dense": 1, "rrf": 1}
    assert b.scores["bm25"] == 8.0 and b.scores["dense"] == 9.0
    assert b.score == b.scores["rrf"] == pytest.approx(1 / 62 + 1 / 61)
    assert b.matched_terms == ("refund",)
    assert fused[2].ranks == {"dense": 2, "rrf": 3} and "bm25" not in fused[2].scores


def test_fuse_hits_weighted_and_unknown_method() -> None:
    fused = fuse_hits({"bm25": hits("bm25", ["a#1", "b#1"]), "dense": hits("dense", ["b#1"])},
                      method="weighted", weights={"bm25": 1.0, "dense": 1.0})
    # a: bm25 1 + 0; b: bm25 0 + dense 1 (a lone score normalises to 1): a tie, a first.
    assert [(h.chunk.chunk_id, h.score) for h in fused] == [("a#1", 1.0), ("b#1", 1.0)]
    assert fused[1].ranks == {"bm25": 2, "dense": 1, "weighted": 2}
    with pytest.raises(InvalidInput, match="unknown fusion"):
        fuse_hits({}, method="max")
