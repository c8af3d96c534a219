"""``[answer] min_coverage = "auto"``: the lexical cut of the extractive answerer per mode
and embedder kind. Dense and hybrid modes with an embedder whose dense gate is calibrated
(e5) take a lower cut, since the gate refuses the near misses word overlap lets through."""

from __future__ import annotations

from pathlib import Path

import pytest

from glassrag import KnowledgeBase, Principal
from glassrag import settings as settings_module
from glassrag.answer.extractive import extractive_answer
from glassrag.errors import InvalidInput
from glassrag.settings import AnswerSettings

READER = Principal("r", roles=["staff"])
# Shares "parcel" and "Canada" with the text, not "customs", "form" or "border": a partial
# cover, under the bm25 cut.
QUESTION = "Which customs form do parcels to Canada need at the border?"


def test_auto_is_per_mode_and_embedder_kind() -> None:
    auto = AnswerSettings()
    assert auto.min_coverage == "auto"
    assert auto.coverage() == auto.coverage("bm25") == 0.28
    assert auto.coverage("hybrid", "e5:multilingual-e5-small") == 0.25
    assert auto.coverage("dense", "e5:multilingual-e5-small") == 0.25
    assert auto.coverage("bm25", "e5:multilingual-e5-small") == 0.28
    assert auto.coverage("hybrid", "st:all-MiniLM-L6-v2") == 0.28  # no calibrated gate
    assert auto.coverage("hybrid", None) == 0.28
    # A number is used in every mode.
    assert AnswerSettings(min_coverage=0.4).coverage("hybrid", "e5:x") == 0.4
    assert auto.resolved("hybrid", "e5:x").min_coverage == 0.25
    with pytest.raises(InvalidInput, match="min_coverage"):
        AnswerSettings(min_coverage=1.5)


@pytest.fixture
def kb(tmp_path: Path) -> KnowledgeBase:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "shipping.md").write_text(
        "# Shipping\n\nParcels to Canada leave the depot every Tuesday morning.\n\n"
        "Parcels to Norway leave on Fridays.\n", encoding="utf-8")
    base = KnowledgeBase.open(tmp_path / "kb")
    assert base.ingest([docs], embedder="hash:256").failed == []
    # No dense hit is close enough to be quoted for its meaning (min_score), and the dense
    # gate is open: only the lexical cut decides, not raised for a short question.
    base.settings.answer = base.settings.answer.model_copy(update={"min_covered_terms": 0.0})
    base.settings.dense = base.settings.dense.model_copy(update={
        "min_margin": 0.0, "min_quote_cosine": -1.0, "min_score": 0.999})
    yield base
    base.close()


def _trace(kb: KnowledgeBase, trace_id: str | None) -> dict:  # type: ignore[type-arg]
    assert trace_id is not None
    return kb.trace(trace_id)


def test_dense_modes_take_the_kinds_cut_and_the_trace_records_it(
        kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    refused = kb.ask(QUESTION, mode="bm25", principal=READER)
    assert refused.status == "no_evidence"
    assert _trace(kb, refused.trace_id)["settings"]["min_coverage"] == 0.28
    notes = extractive_answer(QUESTION, kb.search(QUESTION, principal=READER).hits,
                              kb.settings.answer).notes
    best = float(notes["best_coverage"])  # type: ignore[arg-type]
    assert 0.0 < best < 0.28 and notes["threshold"] == 0.28
    # A kind whose dense gate refuses near misses gets a cut below this question's cover.
    monkeypatch.setitem(settings_module.MIN_COVERAGE_DENSE_BY_KIND, "hash", best - 0.01)
    answer = kb.ask(QUESTION, mode="hybrid", principal=READER)
    assert answer.status == "answered" and "Canada" in answer.answer
    trace = _trace(kb, answer.trace_id)
    assert trace["settings"]["min_coverage"] == best - 0.01
    assert trace["attempts"][0]["draft"]["notes"]["threshold"] == best - 0.01  # lexical
    assert kb.ask(QUESTION, mode="bm25", principal=READER).status == "no_evidence"
    # A number in the settings is the cut in every mode.
    kb.settings.answer = kb.settings.answer.model_copy(update={"min_coverage": 0.3})
    assert kb.ask(QUESTION, mode="hybrid", principal=READER).status == "no_evidence"
