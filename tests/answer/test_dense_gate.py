"""The dense refusal gate (dense and hybrid modes): a quote is refused when the dense
evidence does not stand out from the question's candidates (``[dense] min_margin``) AND the
quote's own cosine to the question is under ``[dense] min_quote_cosine``; the trace says
why. Either signal strong enough answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from glassrag import KnowledgeBase, Principal
from glassrag.records import Draft, DraftCitation
from glassrag.settings import DenseSettings
from shipping_fixtures import SHIPPING_MD

EVERYONE = Principal("o", roles=["ops"])
ADMIN = Principal("root", admin=True)
QUESTION = "How long do parcels to Canada take?"
DENSE_MODES = ("dense", "hybrid")


@pytest.fixture
def gate_kb(tmp_path: Path) -> KnowledgeBase:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "shipping.md").write_text(SHIPPING_MD, encoding="utf-8")
    (docs / "returns.md").write_text(
        "# Returns\n\nReturned parcels are inspected within two days of arrival.\n",
        encoding="utf-8")
    kb = KnowledgeBase.open(tmp_path / "kb")
    assert kb.ingest([docs], embedder="hash:256").failed == []
    yield kb
    kb.close()


def _gate(kb: KnowledgeBase, min_margin: float, min_quote_cosine: float) -> None:
    kb.settings.dense = kb.settings.dense.model_copy(update={
        "min_margin": min_margin, "min_quote_cosine": min_quote_cosine, "min_score": -1.0})


def test_min_quote_cosine_auto_is_per_embedder_kind_and_validated() -> None:
    assert DenseSettings().min_quote_cosine == "auto"
    assert DenseSettings().quote_cosine("e5:multilingual-e5-small") == 0.88
    assert DenseSettings().margin("e5:multilingual-e5-small") == 0.045
    # Not measured for the other kinds: no quote rescues (and their margin is off).
    assert DenseSettings().quote_cosine("st:all-MiniLM-L6-v2") == 1.0
    assert DenseSettings(embedder="hash:64").quote_cosine() == 1.0
    assert DenseSettings(min_quote_cosine=0.5).quote_cosine("e5:x") == 0.5
    with pytest.raises(ValidationError, match="min_quote_cosine"):
        DenseSettings(min_quote_cosine=1.5)


@pytest.mark.parametrize("mode", DENSE_MODES)
def test_a_close_quote_answers_though_the_evidence_does_not_stand_out(
        gate_kb: KnowledgeBase, mode: str) -> None:
    # A margin no candidate list reaches, and every quote close enough: answered.
    _gate(gate_kb, 2.0, -1.0)
    answer = gate_kb.ask(QUESTION, mode=mode, principal=EVERYONE)
    assert answer.status == "answered" and "twelve days" in answer.answer
    # No quote rescues: the margin alone refuses, as before there was a quote cosine.
    _gate(gate_kb, 2.0, 1.0)
    assert gate_kb.ask(QUESTION, mode=mode, principal=EVERYONE).status == "no_evidence"
    # A margin every list reaches: the quote cosine is not looked at.
    _gate(gate_kb, 0.0, 1.0)
    assert gate_kb.ask(QUESTION, mode=mode, principal=EVERYONE).status == "answered"
    assert gate_kb.ask(QUESTION, mode="bm25", principal=EVERYONE).status == "answered"


@pytest.mark.parametrize("mode", DENSE_MODES)
def test_the_threshold_is_the_quotes_own_cosine(gate_kb: KnowledgeBase, mode: str) -> None:
    from glassrag.answer.dense_gate import quote_cosine

    _gate(gate_kb, 2.0, -1.0)
    answer = gate_kb.ask(QUESTION, mode=mode, principal=EVERYONE)
    embedder = gate_kb.dense().embedder
    draft = Draft("answered", answer.answer,
                  tuple(DraftCitation(c.chunk_id, c.quote) for c in answer.citations))
    cosine = quote_cosine(QUESTION, draft, embedder)
    assert cosine is not None and -1.0 < cosine < 1.0
    _gate(gate_kb, 2.0, round(cosine - 0.001, 4))
    assert gate_kb.ask(QUESTION, mode=mode, principal=EVERYONE).status == "answered"
    _gate(gate_kb, 2.0, round(cosine + 0.001, 4))
    assert gate_kb.ask(QUESTION, mode=mode, principal=EVERYONE).status == "no_evidence"


def test_the_trace_says_why_the_gate_refused(gate_kb: KnowledgeBase) -> None:
    _gate(gate_kb, 2.0, 0.999)
    answer = gate_kb.ask(QUESTION, mode="hybrid", principal=EVERYONE)
    assert answer.status == "no_evidence" and answer.citations == ()
    trace = gate_kb.trace(answer.trace_id, principal=ADMIN)
    (attempt,) = trace["attempts"]
    notes = attempt["draft"]["notes"]
    assert attempt["draft"]["status"] == "no_evidence" and attempt["draft"]["text"] == ""
    assert "min_margin 2.000" in notes["reason"] and "min_quote_cosine 0.999" in notes["reason"]
    assert notes["min_margin"] == 2.0 and notes["min_quote_cosine"] == 0.999
    assert notes["quote_cosine"] < 0.999 and notes["dense_margin"] < 2.0
    assert notes["refused_chunks"] and "verification" not in attempt
    # What the asker sees of its own trace: an attempt that was not shown, and no quote.
    view = gate_kb.trace(answer.trace_id, principal=EVERYONE)
    assert view["attempts"] == [{"answerer": "extractive", "outcome": "rejected"}]
    # An answer's trace is unchanged: one verified attempt.
    _gate(gate_kb, 2.0, -1.0)
    shown = gate_kb.ask(QUESTION, mode="hybrid", principal=EVERYONE)
    assert gate_kb.trace(shown.trace_id, principal=ADMIN)["attempts"][0]["verification"]["ok"]


@pytest.mark.parametrize("mode", DENSE_MODES)
def test_a_quote_from_the_section_titled_with_the_questions_identifier_passes(
        tmp_path: Path, mode: str) -> None:
    # A reference whose sections read alike to an embedder: the gate cannot tell them apart,
    # but the question names the section it quotes.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "settings.md").write_text(
        "# Settings\n\n## `retry_limit`\n\nCaps how often a failed upload is tried again.\n\n"
        "## `retry_delay(seconds)`\n\nWaits this long before a failed upload is tried again."
        "\n", encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        assert kb.ingest([docs], embedder="hash:256").failed == []
        _gate(kb, 2.0, 1.0)
        answer = kb.ask("What does retry_limit cap for a failed upload?", mode=mode)
        assert answer.status == "answered" and "Caps how often" in answer.answer
        notes = kb.trace(answer.trace_id, principal=ADMIN)["attempts"][0]["draft"]["notes"]
        assert notes["dense_gate"] == ("passed: the quote is from the section titled "
                                       "'retry_limit', which the question names")
        # A call's signature is no part of its section's title.
        assert kb.ask("What does retry_delay wait for before a failed upload is tried?",
                      mode=mode).status == "answered"
        # An identifier that titles no quoted section: the gate refuses as before.
        assert kb.ask("How often is a failed upload tried again by upload_worker?",
                      mode=mode).status == "no_evidence"


@pytest.mark.parametrize("mode", DENSE_MODES)
def test_a_number_asked_for_and_stated_by_the_first_quote_passes(tmp_path: Path,
                                                                 mode: str) -> None:
    # A value line answers a "how long" question however little the embedder makes of it:
    # the gate lets it pass at any thresholds, and refuses the same question answered in words.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "shipping.md").write_text(
        "# Shipping\n\n## Delivery times\n\nParcels to Canada take 12 days by sea.\n\n"
        "## Sea freight\n\nParcels to Chile take a fortnight by sea.\n", encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        assert kb.ingest([docs], embedder="hash:256").failed == []
        _gate(kb, 2.0, 1.0)
        answer = kb.ask("How long do parcels to Canada take by sea?", mode=mode,
                        principal=ADMIN)
        assert answer.status == "answered" and "12 days" in answer.answer
        notes = kb.trace(answer.trace_id, principal=ADMIN)["attempts"][0]["draft"]["notes"]
        assert notes["dense_gate"] == ("passed: the question asks for a number and the first "
                                       "quote states one")
        words = kb.ask("How long do parcels to Chile take by sea?", mode=mode, principal=ADMIN)
        assert words.status == "no_evidence"
        # A number the question itself names is not one the quote states.
        assert kb.ask("How long do the 12 days to Canada last by sea?", mode=mode,
                      principal=ADMIN).status == "no_evidence"
