"""The seed scorers: seed 000 keyword overlap and seed 001 explicit terms."""

from __future__ import annotations

import pytest

from glassrag.errors import InvalidInput
from glassrag.retrieval.scorers import (
    OVERLAP_STOPWORDS,
    overlap_score,
    overlap_terms,
    terms_score,
    validate_terms,
)


def test_seed_stop_list() -> None:
    assert len(OVERLAP_STOPWORDS) == 31
    assert {"the", "which", "should", "before"} <= OVERLAP_STOPWORDS
    assert "not" not in OVERLAP_STOPWORDS


def test_overlap_tokens_fold_plurals_before_the_stop_check() -> None:
    tokens = overlap_terms("Buses AND trains: 3 ferries, gas!")
    assert tokens == ["buse", "train", "3", "ferrie", "gas"]
    # "does" loses its s first (4 chars) and so escapes the stop list; "has" (3) does not
    assert overlap_terms("What does it has") == ["doe"]
    assert overlap_terms("e-mail OK_2") == ["e", "mail", "ok", "2"]
    assert overlap_terms("Ärger café") == ["rger", "caf"]  # ASCII-only tokens, like the seed


def test_overlap_score_counts_occurrences_of_distinct_query_tokens() -> None:
    score, matched = overlap_score(
        "How long do parcels take to arrive? Parcels!",
        "Parcel delivery",
        "Parcels arrive within three days. Lost parcels are refunded.",
    )
    # parcel: title 1 + text 2 = 3; arrive: 1; "long"/"take" absent; duplicates count once
    assert (score, matched) == (4, ["parcel", "arrive"])


def test_overlap_score_zero_when_only_stop_words_match() -> None:
    assert overlap_score("what is the", "The title", "It is what it is.") == (0, [])


def test_validate_terms_casefolds_strips_and_merges_duplicates() -> None:
    assert validate_terms(["  Retrieval ", "RETRIEVAL", "检索", "Chunk"]) == [
        "retrieval", "检索", "chunk",
    ]  # fmt: skip
    assert validate_terms(["x" * 30]) == ["x" * 30]


@pytest.mark.parametrize(
    ("terms", "fragment"),
    [
        ([], "got 0"),
        (["a", "b", "c", "d", "e", "f"], "got 6"),
        (["fine", "   "], "term 2"),
        (["y" * 31], "term 1"),
    ],
)
def test_validate_terms_errors_name_the_problem(terms: list[str], fragment: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_terms(terms)
    assert fragment in caught.value.message
    assert caught.value.details["field"] == "terms"


def test_validate_terms_error_shows_the_bad_term() -> None:
    with pytest.raises(InvalidInput, match="'" + "z" * 31 + "'"):
        validate_terms(["ok", "z" * 31])


def test_terms_score_one_point_per_distinct_term_in_term_order() -> None:
    text = "Chunking first, then RETRIEVAL; retrieval again and again."
    assert terms_score(["retrieval", "chunk", "answer"], text) == (2, ["retrieval", "chunk"])
    assert terms_score(["answer"], text) == (0, [])
    # substring match, as in the seed: a short term may hit inside a longer word
    assert terms_score(["gain"], text) == (1, ["gain"])
    assert terms_score(["检索", "片段"], "先检索，再读片段。") == (2, ["检索", "片段"])
