"""The offline extractive answerer: quote the evidence sentences that best cover the question.

No model is involved, so every answer is verifiable by construction: each sentence shown is
a verbatim slice of a permitted chunk and is cited as such. Sentences are scored by the
weighted share of the question's terms they contain, where rare terms weigh more (IDF), so
the sentence that carries the specific facts wins over one that merely repeats the topic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from glassrag.records import ANSWERED, NO_EVIDENCE, Chunk, Draft, DraftCitation, Hit
from glassrag.settings import AnswerSettings
from glassrag.text.analysis import analyze, unique_terms
from glassrag.text.sentences import split_sentences as _split


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences the answerer quotes: :func:`glassrag.text.sentences.split_sentences`, with
    the full-width semicolon as a terminator too.

    >>> split_sentences("Refunds take 3.5 days. Ask us!\\n退票。改签；")
    [(0, 22), (23, 30), (31, 34), (34, 37)]
    """
    return _split(text, semicolons=True)

# A further sentence must add at least this share of the question's total term weight;
# below it the sentence only repeats what the first one already answered.
MIN_ADDED_COVERAGE = 0.15
# The first sentence comes from the best-ranked hit unless a lower-ranked hit covers the
# question by more than this margin: retrieval ranking is the better judge of which passage
# is about the question, sentence coverage the better judge of which sentence in it answers.
# (Measured on xquad-en / cmrc2018-dev: most wrong answers quoted a lower hit that merely
# shared question words while the top hit held the answer.)
TOP_HIT_MARGIN = 0.2
# Candidates listed in the draft's notes (the trace); the rest only cost space.
NOTED_CANDIDATES = 10

_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s")


@dataclass(frozen=True)
class _Candidate:
    hit_index: int
    sentence_index: int
    chunk: Chunk
    start: int
    end: int
    terms: frozenset[str]

    @property
    def text(self) -> str:
        return self.chunk.text[self.start : self.end]


def coverage(
    question_terms: list[str], sentence_terms: set[str], weights: dict[str, float]
) -> float:
    """Weighted share of ``question_terms`` found in ``sentence_terms`` (0.0 to 1.0).

    A term missing from ``weights`` weighs 1.0; negative weights count as 0.
    """
    terms = unique_terms(question_terms)
    total = sum(max(weights.get(t, 1.0), 0.0) for t in terms)
    if total <= 0.0:
        return 0.0
    return sum(max(weights.get(t, 1.0), 0.0) for t in terms if t in sentence_terms) / total


def render(choices: list[tuple[str, str]]) -> str:
    """Render ``(source, sentence)`` pairs as ``Based on <source>: <sentences>`` lines.

    Sentences are grouped by source in the order each source was first chosen.
    """
    grouped: dict[str, list[str]] = {}
    for source, sentence in choices:
        grouped.setdefault(source, []).append(sentence)
    return "\n".join(f"Based on {source}: {' '.join(s)}" for source, s in grouped.items())


def extractive_answer(
    question: str,
    evidence: Sequence[Hit],
    settings: AnswerSettings = AnswerSettings(),  # noqa: B008 - frozen, so sharing is safe
    *,
    term_weights: dict[str, float] | None = None,
) -> Draft:
    """Answer ``question`` with verbatim sentences from the permitted, ranked ``evidence``.

    ``term_weights`` (e.g. IDF from the index) replaces the IDF computed over the evidence
    sentences. The draft is ``no_evidence`` when no sentence covers ``min_coverage``.

    The answer comes from the best-ranked hit alone unless sentences from all the hits cover
    the question by more than ``TOP_HIT_MARGIN`` more (or the top hit cannot answer).
    """
    pooled = _answer(question, evidence, settings, term_weights)
    top = _top_hit_index(evidence[: settings.max_hits])
    if len(evidence) < 2:
        return pooled
    alone = _answer(question, [evidence[top]], settings, term_weights)
    if alone.status == ANSWERED and (
        pooled.status != ANSWERED
        or float(pooled.notes["coverage"]) <= float(alone.notes["coverage"]) + TOP_HIT_MARGIN
    ):
        return Draft(status=alone.status, text=alone.text, citations=alone.citations,
                     answerer=alone.answerer,
                     notes={**alone.notes, "from": f"top hit {top + 1}",
                            "pooled_coverage": pooled.notes.get("coverage")})
    return Draft(status=pooled.status, text=pooled.text, citations=pooled.citations,
                 answerer=pooled.answerer, notes={**pooled.notes, "from": "all hits"})


def _answer(
    question: str,
    evidence: Sequence[Hit],
    settings: AnswerSettings,
    term_weights: dict[str, float] | None,
) -> Draft:
    terms = unique_terms(analyze(question))
    candidates = _candidates(evidence, settings.max_hits)
    weights = _weights(terms, candidates, term_weights)
    notes: dict[str, object] = {
        "question_terms": terms,
        "term_weights": {t: round(w, 4) for t, w in weights.items()},
        "weights_from": "evidence" if term_weights is None else "caller",
        "threshold": settings.min_coverage,
    }
    scored = sorted(
        ((coverage(terms, set(c.terms), weights), c) for c in candidates),
        # Equal coverage goes to the better-ranked hit, then the earlier sentence; rounding
        # keeps float noise from overriding that order.
        key=lambda sc: (-round(sc[0], 9), sc[1].hit_index, sc[1].sentence_index),
    )
    best = scored[0][0] if scored else 0.0
    notes["best_coverage"] = round(best, 4)
    if not terms or not scored or best < settings.min_coverage:
        notes["reason"] = _no_evidence_reason(terms, scored, best, settings.min_coverage)
        return Draft(status=NO_EVIDENCE, text="", citations=(), answerer="extractive", notes=notes)

    first = scored[0][1]
    chosen = [first]
    covered = set(chosen[0].terms)
    while len(chosen) < settings.max_sentences:
        gain, extra = _best_addition(terms, weights, covered, scored, chosen)
        if extra is None or gain < MIN_ADDED_COVERAGE:
            break
        chosen.append(extra)
        covered |= extra.terms
    notes["coverage"] = round(coverage(terms, covered, weights), 4)
    notes["sentences"] = [
        {
            "chunk_id": c.chunk.chunk_id, "sentence": c.sentence_index, "start": c.start,
            "end": c.end, "coverage": round(score, 4), "chosen": c in chosen,
            "matched_terms": [t for t in terms if t in c.terms],
        }
        for score, c in scored[:NOTED_CANDIDATES]
    ]
    return Draft(
        status=ANSWERED,
        text=render([(c.chunk.source or c.chunk.doc_id, c.text) for c in chosen]),
        citations=tuple(DraftCitation(c.chunk.chunk_id, c.text) for c in chosen),
        answerer="extractive",
        notes=notes,
    )


def _top_hit_index(evidence: Sequence[Hit]) -> int:
    """The best-ranked hit that is more than a heading: a chunk holding only "# Title"
    matches the question's topic words without saying anything about them."""
    for index, hit in enumerate(evidence):
        lines = [line for line in hit.chunk.text.splitlines() if line.strip()]
        if not all(_HEADING_LINE.match(line) for line in lines):
            return index
    return 0


def _candidates(evidence: Sequence[Hit], max_hits: int) -> list[_Candidate]:
    out: list[_Candidate] = []
    seen: set[str] = set()
    for hit_index, hit in enumerate(evidence[:max_hits]):
        chunk = hit.chunk
        if chunk.chunk_id in seen:  # a fused result list may repeat a chunk
            continue
        seen.add(chunk.chunk_id)
        for sentence_index, (start, end) in enumerate(split_sentences(chunk.text)):
            tokens = frozenset(analyze(chunk.text[start:end]))
            if tokens:
                out.append(_Candidate(hit_index, sentence_index, chunk, start, end, tokens))
    return out


def _weights(
    terms: list[str], candidates: list[_Candidate], given: dict[str, float] | None
) -> dict[str, float]:
    if given is not None:
        known = {t: max(float(given[t]), 0.0) for t in terms if t in given}
    else:
        n = len(candidates)
        known = {}
        for term in terms:
            df = sum(term in c.terms for c in candidates)
            if df:  # BM25's IDF: always positive, so a term in every sentence still counts
                known[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    # A term without a weight (absent from the evidence or the caller's table) counts like
    # the rarest known term: a handful of sentences says little about how rare it really
    # is, and leftover filler words ("many") must not sink an otherwise complete answer.
    fallback = max(known.values(), default=0.0) or 1.0
    return {t: known.get(t, fallback) for t in terms}


def _best_addition(
    terms: list[str],
    weights: dict[str, float],
    covered: set[str],
    scored: list[tuple[float, _Candidate]],
    chosen: list[_Candidate],
) -> tuple[float, _Candidate | None]:
    best_gain, best = 0.0, None
    base = coverage(terms, covered, weights)
    for _, candidate in scored:  # already in preference order, so ">" keeps the tie-break
        if candidate in chosen:
            continue
        gain = coverage(terms, covered | candidate.terms, weights) - base
        if gain > best_gain + 1e-9:
            best_gain, best = gain, candidate
    return best_gain, best


def _no_evidence_reason(
    terms: list[str], scored: list[tuple[float, _Candidate]], best: float, threshold: float
) -> str:
    if not terms:
        return "the question has no searchable terms"
    if not scored:
        return "there is no permitted evidence to quote"
    return (
        f"the best sentence covers {best:.2f} of the question's terms; "
        f"the threshold is {threshold:.2f}"
    )


def semantic_answer(question: str, evidence: Sequence[Hit], embedder: Any, min_score: float,
                    settings: AnswerSettings = AnswerSettings(),  # noqa: B008 - frozen
                    ) -> Draft:
    """Quote the evidence sentence closest in meaning to ``question`` (cosine, same embedder
    as the dense index), for paraphrases that share no words with the answer.

    Still verbatim and cited; ``no_evidence`` when no sentence reaches ``min_score``.
    """
    candidates = _candidates(evidence, settings.max_hits)
    notes: dict[str, object] = {"method": "semantic", "threshold": min_score}
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
    return Draft(
        status=ANSWERED,
        text=render([(best.chunk.source or best.chunk.doc_id, best.text)]),
        citations=(DraftCitation(best.chunk.chunk_id, best.text),),
        answerer="extractive", notes=notes,
    )
