"""Fusion of rankings, checked against values worked out by hand, and the one fusion
(:func:`fuse`) checked against the two it replaced (hybrid search's and the query
rewrite's) on random lists."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.errors import InvalidInput
from glassrag.records import Chunk, Hit
from glassrag.retrieval import rewrite
from glassrag.retrieval.fusion import fuse, quantile_floor, rrf, weighted


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


def test_weighted_with_a_floor_normalises_against_a_quantile_of_each_list() -> None:
    # Crowded cosines: under min-max the dense list's fourth candidate keeps 0.4 of the
    # first's marks; at floor 0.5 (the median, 0.88) it counts nothing.
    scores = {"bm25": {"a": 12.0, "b": 6.0, "c": 3.0, "d": 2.0, "e": 1.0},
              "dense": {"e": 0.90, "f": 0.89, "g": 0.88, "a": 0.84, "h": 0.80}}
    weights = {"bm25": 1.0, "dense": 1.0}
    assert quantile_floor(scores["dense"].values(), 0.5) == 0.88
    assert quantile_floor(scores["dense"].values(), 0.0) == 0.80
    fused = dict(weighted(scores, weights, floor=0.5))
    assert fused["a"] == pytest.approx(1.0)  # bm25's best, and at the dense floor
    assert fused["e"] == pytest.approx(1.0)  # dense's best, under bm25's floor (3.0)
    assert fused["h"] == 0.0 and fused["b"] == pytest.approx(1 / 3)
    assert fused["f"] == pytest.approx(0.5) and fused["g"] == 0.0
    plain = dict(weighted(scores, weights))
    assert plain["a"] == pytest.approx(1.0 + 0.4) and plain["e"] == pytest.approx(1.0)
    # The floor at the best (one candidate) still gives the best its full mark.
    assert weighted({"x": {"a": 2.0}}, {"x": 1.0}, floor=0.9) == [("a", 1.0)]
    assert dict(weighted({"x": {"a": 2.0, "b": 1.0}}, {"x": 1.0}, floor=0.9))["b"] == 0.0
    with pytest.raises(InvalidInput, match="fusion floor"):
        weighted(scores, weights, floor=1.0)
    assert [f.key for f in fuse({"bm25": list(scores["bm25"].items()),
                                 "dense": list(scores["dense"].items())},
                                "weighted", floor=0.5)][:2] == ["a", "e"]


def chunk(chunk_id: str) -> Chunk:
    return Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], ordinal=1, text=chunk_id,
                 line_start=1, line_end=1, char_start=0, char_end=len(chunk_id), heading=None,
                 roles=("public",), doc_version=1, content_hash="h")


def test_weighted_edge_cases() -> None:
    assert weighted({"x": {"a": 3.0, "b": 3.0}}, {"x": 2.0}) == [("a", 2.0), ("b", 2.0)]
    assert weighted({"x": {}}, {"x": 1.0}) == []
    with pytest.raises(InvalidInput, match="no fusion weight for retriever 'dense'"):
        weighted({"dense": {"a": 1.0}}, {"bm25": 1.0})
    with pytest.raises(InvalidInput, match="negative"):
        weighted({"x": {"a": 1.0}}, {"x": -1.0})


def test_fuse_keeps_every_lists_scores_and_ranks() -> None:
    fused = fuse({"bm25": [("a", 9.0), ("b", 8.0)], "dense": [("b", 0.9), ("c", 0.5)]})
    assert [f.key for f in fused] == ["b", "a", "c"]
    b = fused[0]
    assert (b.rank, b.scores, b.ranks) == (1, {"bm25": 8.0, "dense": 0.9},
                                           {"bm25": 2, "dense": 1})
    assert b.score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[2].ranks == {"dense": 2} and "bm25" not in fused[2].scores
    assert [f.key for f in fuse({"x": [("a", 1.0)], "y": [("b", 1.0)]}, limit=1)] == ["a"]


def test_fuse_weighted_single_list_and_unknown_method() -> None:
    fused = fuse({"bm25": [("a", 2.0), ("b", 1.0)], "dense": [("b", 0.7)]}, "weighted",
                 weights={"bm25": 1.0, "dense": 1.0})
    # a: bm25 1 + 0; b: bm25 0 + dense 1 (a lone score normalises to 1): a tie, a first.
    assert [(f.key, f.score, f.rank) for f in fused] == [("a", 1.0, 1), ("b", 1.0, 2)]
    # One list is its own ranking: its scores are kept, not normalised.
    assert [(f.key, f.score) for f in fuse({"bm25": [("a", 7.5), ("b", 3.0)]}, "weighted")] \
        == [("a", 7.5), ("b", 3.0)]
    assert fuse({"bm25": [], "dense": []}) == []
    with pytest.raises(InvalidInput, match="unknown fusion"):
        fuse({}, method="max")


# -- the implementations fuse() replaced, kept here as the reference ----------------------


def _old_hybrid(lists: dict[str, list[tuple[int, float]]], fusion: str, weights: dict[str, float],
                rrf_k: int, limit: int) -> list[tuple[int, float, dict, dict]]:
    """retrieval/search._fused_hits before fuse(), without the chunk loading."""
    if limit < 1 or not any(lists.values()):
        return []
    scores = {name: dict(matches) for name, matches in lists.items()}
    ranks = {name: {rowid: r for r, (rowid, _) in enumerate(matches, start=1)}
             for name, matches in lists.items()}
    if len(lists) == 1:
        [(name, matches)] = lists.items()
        method, fused = name, list(matches)
    elif fusion == "weighted":
        method, fused = "weighted", weighted(scores, weights)
    else:
        method, fused = "rrf", rrf({n: [r for r, _ in ms] for n, ms in lists.items()}, rrf_k)
    out = []
    for rank, (rowid, score) in enumerate(fused[:limit], start=1):
        per_scores = {n: scores[n][rowid] for n in lists if rowid in scores[n]}
        per_ranks = {n: ranks[n][rowid] for n in lists if rowid in ranks[n]}
        if len(lists) > 1:
            per_scores[method], per_ranks[method] = score, rank
        out.append((rowid, score, per_scores, per_ranks))
    return out


def _new_hybrid(lists: dict[str, list[tuple[int, float]]], fusion: str, weights: dict[str, float],
                rrf_k: int, limit: int) -> list[tuple[int, float, dict, dict]]:
    """What _fused_hits now does with fuse()'s result."""
    if limit < 1:
        return []
    out = []
    for f in fuse(lists, fusion, k=rrf_k, weights=weights, limit=limit):
        scores, ranks = dict(f.scores), dict(f.ranks)
        if len(lists) > 1:
            scores[fusion], ranks[fusion] = f.score, f.rank
        out.append((f.key, f.score, scores, ranks))
    return out


def _old_rewrite_fused(first: Sequence[Hit], second: Sequence[Hit], k: int) -> list[Hit]:
    """retrieval/rewrite._fused before fuse()."""
    by_first = {h.chunk.chunk_id: h for h in first}
    by_second = {h.chunk.chunk_id: h for h in second}
    ranking = rrf({"question": list(by_first), "rewritten": list(by_second)}, k)
    hits = []
    for rank, (chunk_id, score) in enumerate(ranking, start=1):
        a, b = by_first.get(chunk_id), by_second.get(chunk_id)
        base = a if a is not None else b
        assert base is not None
        scores, ranks = (dict(a.scores), dict(a.ranks)) if a is not None else ({}, {})
        terms = a.matched_terms if a is not None else ()
        if b is not None:
            scores.update({rewrite.PREFIX + name: v for name, v in b.scores.items()})
            ranks.update({rewrite.PREFIX + name: r for name, r in b.ranks.items()})
            terms = tuple(dict.fromkeys(terms + b.matched_terms))
        scores[rewrite.FUSED], ranks[rewrite.FUSED] = score, rank
        hits.append(dataclasses.replace(base, score=score, matched_terms=terms,
                                        scores=scores, ranks=ranks))
    return hits


def _ranked(draw: st.DrawFn, keys: st.SearchStrategy[int]) -> list[tuple[int, float]]:
    ids = draw(st.lists(keys, unique=True, max_size=12))
    # Few distinct scores, so ties (and their order) are exercised too.
    values = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0]), min_size=len(ids),
                           max_size=len(ids)))
    return sorted(zip(ids, values, strict=True), key=lambda item: -item[1])


@st.composite
def hybrid_inputs(draw: st.DrawFn) -> tuple[dict[str, list[tuple[int, float]]], str,
                                            dict[str, float], int, int]:
    names = draw(st.sampled_from([["bm25"], ["dense"], ["bm25", "dense"]]))
    lists = {name: _ranked(draw, st.integers(1, 20)) for name in names}
    weights = {"bm25": draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])),
               "dense": draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))}
    return (lists, draw(st.sampled_from(["rrf", "weighted"])), weights,
            draw(st.sampled_from([0, 1, 60])), draw(st.integers(0, 15)))


@settings(max_examples=300, deadline=None)
@given(hybrid_inputs())
def test_fuse_gives_hybrid_search_the_same_hits_as_before(case: tuple) -> None:
    assert _new_hybrid(*case) == _old_hybrid(*case)


def _hits(pairs: list[tuple[int, float]], name: str) -> list[Hit]:
    return [Hit(chunk=chunk(f"d{key % 5}#{key}"), score=score, matched_terms=(f"t{key % 3}",),
                scores={name: score}, ranks={name: rank})
            for rank, (key, score) in enumerate(pairs, start=1)]


@st.composite
def ranked(draw: st.DrawFn) -> list[tuple[int, float]]:
    return _ranked(draw, st.integers(1, 20))


@settings(max_examples=300, deadline=None)
@given(ranked(), ranked(), st.sampled_from([0, 1, 60]))
def test_fuse_gives_the_rewrite_the_same_hits_as_before(
        first: list[tuple[int, float]], second: list[tuple[int, float]], k: int) -> None:
    question, rewritten = _hits(first, "bm25"), _hits(second, "dense")
    assert rewrite._fused(question, rewritten, k) == _old_rewrite_fused(question, rewritten, k)
