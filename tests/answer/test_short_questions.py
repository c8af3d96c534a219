"""A question of few terms must have more of them covered: two words of five are 40% of it
by chance in an unrelated sentence. ``[answer] min_covered_terms`` raises the share a short
question's best sentence must cover; such a near miss is refused in every mode, the semantic
fallback of dense and hybrid modes included, and the calibration replays it so. The semantic
fallback itself answers only questions of ``[answer] semantic_min_terms`` terms (12 with e5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.errors import InvalidInput
from glassrag.eval.docs_questions import DocsQuestion
from glassrag.eval.refusal_calibration import outcome
from glassrag.eval.refusal_signals import record
from glassrag.settings import DEFAULT_MIN_COVERAGE, MAX_SHORT_QUESTION_COVERAGE, AnswerSettings

DOCS = [
    {"doc_id": "kiln", "title": "Kiln",
     "text": "The kiln fires glazed pots at night. Unglazed pots dry on the rack for a week "
             "before firing."},
    {"doc_id": "shop", "title": "Shop",
     "text": "The shop sells finished bowls on Saturdays. Orders ship within three days."},
]
# Five terms; the kiln's first sentence holds two of them (kiln, glaze): 0.40 of the question.
NEAR_MISS = "When do the kiln staff paint glazed bowls?"
# One word shared (bowl): no lexical evidence at all, the semantic fallback's case.
PARAPHRASE = "Which weekday can customers purchase bowls?"


def test_the_share_required_grows_as_the_question_shrinks() -> None:
    settings = AnswerSettings(min_coverage=0.28, min_covered_terms=2.8)
    assert settings.required_coverage(20) == settings.required_coverage(10) == 0.28
    assert settings.required_coverage(8) == pytest.approx(0.35)
    assert settings.required_coverage(7) == pytest.approx(0.4)
    assert settings.required_coverage(3) == MAX_SHORT_QUESTION_COVERAGE
    # A higher min_coverage stands; 0 turns the rule off.
    assert AnswerSettings(min_coverage=0.6).required_coverage(5) == 0.6
    off = AnswerSettings(min_covered_terms=0)
    assert off.required_coverage(3) == off.coverage() == DEFAULT_MIN_COVERAGE
    # Chinese and Japanese questions (None: their terms are not words) take the floor.
    assert settings.required_coverage(None) == 0.28


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(tmp_path / "kb") as opened:
        opened.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)], embedder="hash:256")
        # Any sentence sharing a token with the question is close enough in meaning.
        monkeypatch.setattr(opened.settings, "dense",
                            opened.settings.dense.model_copy(update={"min_score": 0.05}))
        yield opened


def _notes(kb: KnowledgeBase, trace_id: str) -> dict:
    [attempt] = kb.trace(trace_id)["attempts"]
    return attempt["draft"]["notes"]


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_a_short_question_with_too_few_of_its_words_covered_is_refused(
        kb: KnowledgeBase, mode: str) -> None:
    answer = kb.ask(NEAR_MISS, mode=mode)
    assert answer.status == "no_evidence"
    notes = _notes(kb, answer.trace_id)
    assert notes["short_question"] is True and "method" not in notes  # no semantic fallback
    assert DEFAULT_MIN_COVERAGE <= notes["best_coverage"] == 0.4 < notes["threshold"] == 0.5
    assert notes["reason"].endswith("the threshold is 0.50, raised for a question of 5 words")


def test_the_semantic_fallback_still_answers_a_paraphrase(kb: KnowledgeBase) -> None:
    answer = kb.ask(PARAPHRASE, mode="dense")
    assert answer.status == "answered"
    assert _notes(kb, answer.trace_id)["method"] == "semantic"
    assert answer.citations[0].doc_id == "shop"


def test_without_the_rule_the_near_miss_is_answered(kb: KnowledgeBase,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kb.settings, "answer",
                        kb.settings.answer.model_copy(update={"min_covered_terms": 0.0}))
    answer = kb.ask(NEAR_MISS, mode="bm25")
    assert answer.status == "answered"
    assert answer.citations[0].quote == "The kiln fires glazed pots at night."


def test_the_semantic_fallback_bound_is_per_embedder_kind() -> None:
    auto = AnswerSettings()
    assert auto.semantic_terms("hybrid", "e5:multilingual-e5-small") == 12
    assert auto.semantic_terms("dense", "e5:multilingual-e5-small") == 12
    assert auto.semantic_terms("bm25", "e5:multilingual-e5-small") == 0
    assert auto.semantic_terms("hybrid", "hash:256") == 0  # not measured: no bound
    assert AnswerSettings(semantic_min_terms=3).semantic_terms("hybrid", "hash:256") == 3
    assert auto.resolved("hybrid", "e5:x").semantic_min_terms == 12
    with pytest.raises(InvalidInput, match="semantic_min_terms"):
        AnswerSettings(semantic_min_terms=-1)


@pytest.mark.parametrize(("least", "status"), [(4, "answered"), (5, "no_evidence")])
def test_the_semantic_fallback_answers_a_question_of_enough_terms(
        kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, least: int, status: str) -> None:
    monkeypatch.setattr(kb.settings, "answer",
                        kb.settings.answer.model_copy(update={"semantic_min_terms": least}))
    answer = kb.ask(PARAPHRASE, mode="dense")  # four terms: weekday, custom, purchas, bowl
    assert answer.status == status
    notes = _notes(kb, answer.trace_id)
    assert notes["method"] == "semantic"
    if status == "no_evidence":
        assert notes["reason"].startswith("the question has fewer than 5 terms")


def test_the_calibration_replays_a_near_miss_without_the_fallback(kb: KnowledgeBase) -> None:
    question = DocsQuestion("q1", NEAR_MISS, answerable=False)
    signals = record(kb, question, Principal("eval"), "hybrid", "hash:256", None, [0.28, 0.6])
    full = tuple(signals.hits)
    # At 0.28 the refusal is the short question's (its best sentence covers 0.40); at 0.6 it
    # is min_coverage's own, and the fallback is asked.
    assert signals.near_misses == {(full, 0.28)}
    assert signals.extractive[full] == {0.28: None, 0.6: None}
    assert outcome(signals, 0.28, -1.0, "hybrid") is signals.refused
    assert outcome(signals, 0.6, -1.0, "hybrid")["status"] == "answered"
