"""A short quote after the full ones (``[answer] max_short_quotes``): the next quote the answer
would add anyway, when it is a line of at most SHORT_QUOTE_CHARS characters."""

from __future__ import annotations

import pytest
from tests.answer.test_answer import make_hit

from glassrag.answer import extractive
from glassrag.answer.dense_gate import quote_cosine
from glassrag.answer.extractive import ASIDES, SHORT_QUOTE_CHARS, extractive_answer
from glassrag.answer.semantic import semantic_answer
from glassrag.dense.hash_embedder import HashEmbedder
from glassrag.records import ANSWERED, Draft, DraftCitation
from glassrag.settings import AnswerSettings

# Three facts about a kiln, each holding other words of the question; the third, a short
# list item, adds the fewest.
KILN = ("Glazed tiles may leave the kiln only after cooling overnight with the door kept "
        "closed.\n\n"
        "The kiln must heat slowly through the morning, about four hours at the full firing "
        "temperature.\n\n"
        "- Top shelf: empty")
QUESTION = ("Tell me about glazed tiles leaving the kiln, heating it slowly to full temperature, "
            "and the top shelf.")


def quotes(settings: AnswerSettings, text: str = KILN) -> list[str]:
    draft = extractive_answer(QUESTION, [make_hit("kiln#1", text)], settings)
    assert draft.status == ANSWERED
    return [c.quote for c in draft.citations]


def test_a_short_line_adding_question_words_follows_the_full_quotes() -> None:
    got = quotes(AnswerSettings(min_covered_terms=0))
    assert len(got) == 3
    assert got[2] == "- Top shelf: empty"
    assert len(got[2]) <= SHORT_QUOTE_CHARS


def test_none_when_turned_off() -> None:
    got = quotes(AnswerSettings(min_covered_terms=0, max_short_quotes=0))
    assert len(got) == 2
    assert "- Top shelf: empty" not in got


def test_a_long_third_quote_is_not_added(monkeypatch: pytest.MonkeyPatch) -> None:
    long_line = ("- Top shelf: leave it empty during the first firing of the morning, when the "
                 "heat is uneven")
    assert len(long_line) > SHORT_QUOTE_CHARS
    text = KILN.replace("- Top shelf: empty", long_line)
    assert len(quotes(AnswerSettings(min_covered_terms=0), text)) == 2
    # Its length alone keeps it out.
    monkeypatch.setattr(extractive, "SHORT_QUOTE_CHARS", len(long_line))
    assert quotes(AnswerSettings(min_covered_terms=0), text)[2] == long_line


def test_the_draft_notes_which_quotes_are_short() -> None:
    settings = AnswerSettings(min_covered_terms=0, context_chars=0)
    draft = extractive_answer(QUESTION, [make_hit("kiln#1", KILN)], settings)
    assert draft.notes[ASIDES] == [2]
    one = extractive_answer(QUESTION, [make_hit("kiln#1", KILN)],
                            AnswerSettings(min_covered_terms=0, max_short_quotes=0,
                                           context_chars=0))
    assert one.notes[ASIDES] == []


class _Embedder:
    """Vectors that make only the quote "close" close to the question."""

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    def embed(self, texts: list[str]):  # type: ignore[no-untyped-def]
        import numpy as np
        return np.array([[1.0, 0.0] if t == "close" else [0.0, 1.0] for t in texts])


def test_the_dense_gate_does_not_measure_the_asides() -> None:
    def draft(asides: list[int]) -> Draft:
        return Draft(status=ANSWERED, text="", answerer="extractive",
                     citations=(DraftCitation("a#1", "far"), DraftCitation("a#1", "close")),
                     notes={ASIDES: asides})
    assert quote_cosine("q", draft([]), _Embedder()) == 1.0
    assert quote_cosine("q", draft([1]), _Embedder()) == 0.0
    assert quote_cosine("q", draft([0]), _Embedder()) == 1.0
    # An answer made of asides alone is measured whole.
    assert quote_cosine("q", draft([0, 1]), _Embedder()) == 1.0


def test_the_semantic_fallback_adds_a_short_quote_too() -> None:
    failure = make_hit("export#2", "An export stops halfway when the disk is nearly full.")
    schedule = make_hit("sched#5", "Each nightly run keeps its log in /var/log/exporter.log "
                        "for a week.")
    pager = make_hit("pager#1", "- Paged: the on-call admin")
    question = ("Why does my nightly export stop halfway through, where is its log kept, and "
                "who is paged?")

    def quoted(short: int) -> list[str]:
        draft = semantic_answer(question, [failure, schedule, pager], HashEmbedder(256), 0.1,
                                AnswerSettings(max_short_quotes=short))
        return [c.quote for c in draft.citations]

    full = ["An export stops halfway when the disk is nearly full.",
            "Each nightly run keeps its log in /var/log/exporter.log for a week."]
    assert quoted(0) == full
    assert quoted(1) == [*full, "- Paged: the on-call admin"]
