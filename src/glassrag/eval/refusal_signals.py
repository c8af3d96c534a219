"""The signals a calibration sweeps, recorded per question with the refusal gates open.

:func:`record` retrieves a question once, with the dense cut-off at -1 so no dense candidate
is dropped, and keeps what every gate looks at: the judged extractive draft at each coverage
threshold (per prefix of the dense ranking in dense mode), each hit's cosine and its closest
sentence's, the cosines of the question's dense candidates (its dense margin at any
``min_score``) and every answered draft's quote cosine. :mod:`glassrag.eval.refusal_calibration`
sweeps the thresholds over these offline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from glassrag.answer.dense_gate import passes_at_any_threshold
from glassrag.errors import GlassragError
from glassrag.eval.docs import judge
from glassrag.eval.docs_questions import DocsQuestion
from glassrag.records import ANSWERED, DENSE_MODES, Answer, Draft, Hit, Principal

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase
    from glassrag.settings import AnswerSettings


Row = dict[str, Any]


@dataclass
class Signals:
    """What the gates of one question look at, and the judged outcome of every choice."""

    question: DocsQuestion
    # chunk ids of a hit list -> coverage threshold -> judged row (an answered draft) or None
    extractive: dict[tuple[str, ...], dict[float, Row | None]] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)  # chunk ids, best first
    dense: list[float | None] = field(default_factory=list)  # each hit's cosine
    semantic: list[tuple[float, Row]] = field(default_factory=list)  # closest sentence per hit
    refused: Row = field(default_factory=dict)
    error: str | None = None
    # Dense and hybrid: the cosines of the question's dense candidates (gate open), from
    # which the dense margin at any min_score follows, and the min_score in use.
    candidates: list[float] = field(default_factory=list)
    cut: float | None = None
    # The quote cosine of every answered row above, by the row's identity.
    quote_cosines: dict[int, float | None] = field(default_factory=dict)
    # (hit list, coverage threshold) where the extractive refusal was a short question's near
    # miss: the semantic fallback is not asked (extractive.SHORT_QUESTION).
    near_misses: set[tuple[tuple[str, ...], float]] = field(default_factory=set)

    def margin_at(self, cut: float | None) -> float | None:
        """The dense margin retrieval measures with ``[dense] min_score`` ``cut``: over the
        candidates at or above it (a cut keeps the best of the same ranking)."""
        from glassrag.retrieval.search import cosine_margin

        return cosine_margin([c for c in self.candidates if cut is None or c >= cut])

    def summary(self) -> dict[str, Any]:
        """The recorded signals, for the JSON report."""
        full = self.extractive.get(tuple(self.hits), {})
        answering = [t for t, row in full.items() if row is not None]
        cosines = [d for d in self.dense if d is not None]
        margin = self.margin_at(self.cut)
        return {"id": self.question.qid, "answerable": self.question.answerable,
                "corpus": self.question.corpus, "kind": self.question.kind,
                "coverage": max(answering) if answering else None,
                "dense_top": round(max(cosines), 4) if cosines else None,
                "semantic_best": round(max(s for s, _ in self.semantic), 4)
                if self.semantic else None,
                "dense_margin": None if margin is None else round(margin, 4),
                "error": self.error}


def record(kb: KnowledgeBase, question: DocsQuestion, principal: Principal, mode: str,
           embedder: str | None, top_k: int | None,
           coverages: Sequence[float]) -> Signals:
    """Retrieve once with the gates open and judge every outcome the ``coverages``
    thresholds and any cosine threshold can pick."""
    from glassrag.pipeline import run_retrieval

    out = Signals(question, refused=judge(question, _refusal(question)))
    try:
        req = kb._request(question.question, principal, top_k, mode, None, embedder)
        if req.dense_settings is not None:  # gate open: no dense candidate is cut
            req = dataclasses.replace(req, dense_settings=req.dense_settings.model_copy(
                update={"min_score": -1.0}))
        with kb.lock:
            kb._sync()
            found = run_retrieval(kb.store, kb.lexical, req)
        settings = kb.settings.answer.resolved(mode, req.spec)
        # What status_and_draft() refuses whatever the thresholds swept here: a name no readable
        # document mentions. The dense gate is swept: its margin is recorded.
        hits = list(found.hits) if not found.unknown else []
        if req.dense is not None and mode in DENSE_MODES and found.query_vector is not None:
            out.candidates = _candidates(kb, req, found.query_vector)
            out.cut = kb.settings.dense.min_cosine(req.dense.spec)
        out.hits = [h.chunk.chunk_id for h in hits]
        out.dense = [h.scores.get("dense") for h in hits]
        lists = [hits] if mode != "dense" else [hits[:n] for n in range(1, len(hits) + 1)]
        for subset in lists:
            ids = tuple(h.chunk.chunk_id for h in subset)
            out.extractive[ids] = {}
            for t in coverages:
                row, near_miss = _extractive(question, subset, settings, t, found.rare_names)
                out.extractive[ids][t] = row
                if near_miss:
                    out.near_misses.add((ids, t))
        if req.dense is not None and mode in DENSE_MODES:
            once = _QuestionOnce(req.dense.embedder)
            out.semantic = [_semantic(question, hit, hits, once, settings, found.rare_names)
                            for hit in hits]
            if len(out.candidates) > 1:  # a margin to fall short of
                _quote_cosines(out, once)
    except GlassragError as exc:  # recorded as ask would report it; the sweep goes on
        out.error = exc.message
        out.refused = judge(question, None, exc.message)
    return out


def _candidates(kb: KnowledgeBase, req: Any, vector: Any) -> list[float]:
    """The cosines of the question's permitted dense candidates, as retrieval reads them
    (``[dense] candidates``, at least ``top_k``) with no cut."""
    from glassrag.retrieval.search import readable_sets

    settings = kb.settings.dense
    with kb.lock:
        matches = req.dense.search(vector, readable_sets(kb.store, req.principal),
                                   max(req.top_k, settings.candidates), 0, -1.0,
                                   exact=req.conceal)[0]
    return [m.score for m in matches]


def _quote_cosines(out: Signals, embedder: Any) -> None:
    """The quote cosine (:func:`glassrag.answer.dense_gate.quote_cosine`) of every answered
    row of ``out``; the semantic rows carry theirs already."""
    from glassrag.answer.dense_gate import quote_cosine
    from glassrag.records import DraftCitation

    for similarity, row in out.semantic:
        if row:
            out.quote_cosines[id(row)] = similarity
    question = out.question.question
    for by_coverage in out.extractive.values():
        for answered in by_coverage.values():
            if answered is not None and id(answered) not in out.quote_cosines:
                quotes = tuple(DraftCitation("", q) for q in answered.get("_quotes", ()))
                draft = Draft(status=ANSWERED, text="", citations=quotes)
                out.quote_cosines[id(answered)] = quote_cosine(question, draft, embedder)


def _refusal(question: DocsQuestion) -> Answer:
    return Answer(status="no_evidence", answer="", citations=(), evidence=(), trace_id=None,
                  question=question.question)


def _verified(question: DocsQuestion, draft: Draft, evidence: Sequence[Hit],
              rare_names: Sequence[tuple[str, ...]]) -> Row | None:
    from glassrag.answer.named import unquoted_name
    from glassrag.answer.verify import verify

    # What status_and_draft() refuses whatever the thresholds: a quote missing a rare name.
    if draft.status != ANSWERED or unquoted_name(draft, evidence, rare_names) is not None:
        return None
    checked = verify(draft, list(evidence))
    if not checked.ok:
        return None
    answer = Answer(status=ANSWERED, answer=draft.text, citations=checked.citations,
                    evidence=tuple(evidence), trace_id=None, question=question.question)
    # The quotes stay with the row for the dense gate's quote cosine, and whether the gate
    # lets it pass whatever its thresholds (a number asked for and stated, a quote from the
    # section the question names).
    return {**judge(question, answer), "_quotes": [c.quote for c in draft.citations],
            "_passes": passes_at_any_threshold(question.question, draft, evidence) is not None}


def _extractive(question: DocsQuestion, hits: Sequence[Hit], settings: AnswerSettings,
                threshold: float, rare_names: Sequence[tuple[str, ...]],
                ) -> tuple[Row | None, bool]:
    """The judged answered row at ``threshold`` (None: refused), and whether the refusal
    was a short question's near miss."""
    from glassrag.answer.extractive import SHORT_QUESTION, extractive_answer

    if not hits:
        return None, False
    draft = extractive_answer(question.question, hits,
                              settings.model_copy(update={"min_coverage": threshold}))
    return (_verified(question, draft, hits, rare_names),
            bool(draft.notes.get(SHORT_QUESTION)))


class _QuestionOnce:
    """The embedder, with the question embedded once for all the hits it is compared with
    and each passage text once for all the drafts that quote it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._queries: dict[tuple[str, ...], Any] = {}
        self._passages: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self._passages]
        if missing:
            self._passages.update(zip(missing, self.inner.embed(missing), strict=True))
        return np.stack([self._passages[t] for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> Any:
        key = tuple(texts)
        if key not in self._queries:
            self._queries[key] = self.inner.embed_queries(texts)
        return self._queries[key]


def _semantic(question: DocsQuestion, hit: Hit, hits: Sequence[Hit], embedder: Any,
              settings: AnswerSettings, rare_names: Sequence[tuple[str, ...]],
              ) -> tuple[float, Row]:
    """The sentence of ``hit`` closest in meaning to the question, and its cosine."""
    from glassrag.answer.semantic import semantic_answer

    draft = semantic_answer(question.question, [hit], embedder, -1.0, settings)
    similarity = float(draft.notes.get("best_similarity", -1.0))
    return similarity, _verified(question, draft, hits, rare_names) or {}
