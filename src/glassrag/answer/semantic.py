"""The semantic fallback: quote the evidence sentence closest in meaning to the question.

In dense and hybrid modes a paraphrase may share no words with the sentence that answers it,
so when no unit covers the question lexically the sentence whose embedding is nearest the
question's is quoted instead, still verbatim and cited, with the value its section states
when the question asks for one (chosen as :func:`~glassrag.answer.extractive.extractive_answer`
chooses it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from glassrag.answer.extractive import further_quotes, render
from glassrag.answer.passages import Unit, heading_terms, units
from glassrag.answer.scoring import question_terms, ranked, weights_for
from glassrag.answer.value_choice import value_for
from glassrag.answer.values import missing_value
from glassrag.records import ANSWERED, NO_EVIDENCE, Draft, DraftCitation, Hit
from glassrag.settings import AnswerSettings


def semantic_answer(question: str, evidence: Sequence[Hit], embedder: Any, min_score: float,
                    settings: AnswerSettings = AnswerSettings(),  # noqa: B008 - frozen
                    ) -> Draft:
    """Quote the evidence sentence closest in meaning to ``question`` (cosine, same embedder
    as the dense index), for paraphrases that share no words with the answer, with the block
    it introduces and, when it lacks the value the question asks for, the unit of its section
    that holds it, then the quotes covering more of the question's words (both as
    :func:`~glassrag.answer.extractive.extractive_answer` chooses them).

    Still verbatim and cited; ``no_evidence`` when no sentence reaches ``min_score``, or
    when the question has fewer than ``settings.semantic_min_terms`` distinct terms (a
    number once :meth:`~glassrag.settings.AnswerSettings.resolved`; "auto" is no bound).
    """
    notes: dict[str, object] = {"method": "semantic", "threshold": min_score}
    if not long_enough(question, settings):
        notes["reason"] = (f"the question has fewer than {settings.semantic_min_terms} terms: "
                           "the sentence closest in meaning to so short a question is rarely "
                           "its answer")
        return Draft(status=NO_EVIDENCE, text="", answerer="extractive", notes=notes)
    quotable = units(evidence, settings.max_hits)
    candidates = [u for u in quotable if u.size == 1]
    if not candidates:
        return Draft(status=NO_EVIDENCE, text="", answerer="extractive", notes=notes)
    # The question is a query and the sentences are passage text: asymmetric models (E5)
    # embed the two sides differently.
    question_vector = embedder.embed_queries([question])[0]
    scores = embedder.embed([c.text for c in candidates]) @ question_vector
    order = sorted(range(len(candidates)),
                   key=lambda i: (-round(float(scores[i]), 6), candidates[i].hit_index))
    best = candidates[order[0]]
    notes["best_similarity"] = round(float(scores[order[0]]), 4)
    if float(scores[order[0]]) < min_score:
        notes["reason"] = "no sentence is close enough in meaning to the question"
        return Draft(status=NO_EVIDENCE, text="", answerer="extractive", notes=notes)
    chosen = [best]
    if settings.max_sentences > 1:
        value = _semantic_value(question, best, quotable)
        if value is not None:
            chosen.append(value)
    missing = missing_value(question, [u.quote for u in chosen])  # with what ":" introduces
    if missing is not None:
        notes["reason"] = f"the question asks for {missing} and the closest sentence states none"
        return Draft(status=NO_EVIDENCE, text="", answerer="extractive", notes=notes)
    # Further quotes are context for the sentence the answer stands on: the quantity asked for
    # must be in that sentence or its value line.
    chosen += _further(question, chosen, quotable, settings.max_sentences,
                       settings.max_short_quotes)
    quotes = [u.quote for u in chosen]
    return Draft(
        status=ANSWERED,
        text=render([(u.chunk.source or u.chunk.doc_id, q)
                     for u, q in zip(chosen, quotes, strict=True)]),
        citations=tuple(DraftCitation(u.chunk.chunk_id, q)
                        for u, q in zip(chosen, quotes, strict=True)),
        answerer="extractive", notes=notes,
    )


def long_enough(question: str, settings: AnswerSettings) -> bool:
    """Whether ``question`` has the ``semantic_min_terms`` distinct terms the semantic
    fallback needs ("auto", unresolved, is no bound)."""
    least = settings.semantic_min_terms
    return not isinstance(least, int) or len(question_terms(question)) >= least


def _further(question: str, chosen: list[Unit], quotable: Sequence[Unit],
             limit: int, short: int = 0) -> list[Unit]:
    """The quotes to add after the sentence closest in meaning (and its value): those covering
    more of the question's words, chosen as the lexical answerer adds them, ``short`` short
    ones after ``limit`` (:func:`~glassrag.answer.extractive.further_quotes`)."""
    if len(chosen) >= limit + short:
        return []
    terms = question_terms(question)
    weights = weights_for(terms, quotable, None, question)
    scored = ranked(question, terms, weights, quotable)
    placed = [s for u in chosen for s in scored if s.unit is u]
    if len(placed) != len(chosen):
        return []  # a chosen unit only repeats the question (ranked leaves it out)
    covered: set[str] = set().union(*(s.covered | s.unit.context for s in placed))
    added = further_quotes(terms, weights, covered, scored, placed,
                           heading_terms(chosen[0].chunk), limit, short)
    return [s.unit for s, _ in added]


def _semantic_value(question: str, best: Unit, candidates: Sequence[Unit]) -> Unit | None:
    """Beside the sentence closest in meaning, the unit of its section holding the value the
    question asks for, chosen as the lexical answerer chooses it
    (:func:`~glassrag.answer.value_choice.value_for`)."""
    section = [u for u in candidates if u.chunk.chunk_id == best.chunk.chunk_id]
    terms = question_terms(question)
    scored = ranked(question, terms, weights_for(terms, section, None, question), section)
    first = next((s for s in scored if s.unit.start == best.start and s.unit.size == 1), None)
    value = value_for(question, first, scored) if first is not None else None
    return value.unit if value is not None else None
