"""``ask``, top to bottom: validate -> retrieve (roles inside) -> rewrite (optional: the
rewritten query retrieved too, fused) -> status and extractive draft (or both left to the
model) -> answer ->
verify -> disclose -> trace. Each stage is a plain function call with a typed result, timed.

Search, inspect and dry-run share its first stages: every read is one :class:`Request`, built
by the knowledge base in one place, retrieved by :func:`run_retrieval`, and told to the
principal through :func:`glassrag.disclosure.disclose`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glassrag.answer.dense_gate import NO_RESCUE, refusal
from glassrag.answer.extractive import SHORT_QUESTION, extractive_answer
from glassrag.answer.named import unnamed_refusal
from glassrag.answer.semantic import long_enough, semantic_answer
from glassrag.answer.verify import verify
from glassrag.disclosure import disclose
from glassrag.errors import GlassragError
from glassrag.llm.client import LLMAnswerer
from glassrag.observe import ask_finished
from glassrag.records import (
    ANSWERED,
    BLOCKED,
    NO_EVIDENCE,
    UNVERIFIED,
    Answer,
    Citation,
    Draft,
    Hit,
    Principal,
    Status,
    Verification,
)
from glassrag.retrieval.rewrite import RewriteHook, RewriteStage, fuse_retrievals, run_rewrite
from glassrag.retrieval.search import (
    MAX_QUERY_CHARS,
    Retrieval,
    SearchIndex,
    check_query,
    check_top_k,
    retrieve,
)
from glassrag.settings import AnswerSettings, DenseSettings, Settings
from glassrag.store.database import Store, now
from glassrag.store.traces import new_trace_id, save
from glassrag.trace import (
    Trace,
    TraceCandidate,
    TraceEvidence,
    TracePrincipal,
    TraceSettings,
)

if TYPE_CHECKING:
    from glassrag.dense.retriever import DenseRetriever

# A question is held to the same limit as a search's query.
MAX_QUESTION_CHARS = MAX_QUERY_CHARS
# How many blocked candidates the status decision (and the audit trace) looks at.
BLOCKED_LIMIT = 5
Guard = AbstractContextManager[object]

REFUSALS = {
    NO_EVIDENCE: "I do not have enough permitted evidence to answer this question.",
    BLOCKED: "I do not have enough permitted evidence to answer this question.",
    UNVERIFIED: "An answer was produced but its citations failed verification, "
                "so it is not shown.",
}


@dataclass(frozen=True)
class Request:
    """One read (search, inspect, dry-run or ask) as the knowledge base builds it, in one
    place: defaults applied, the text and ``top_k`` checked, the dense retriever resolved,
    and whether the ``conceal`` policy applies to this principal."""

    question: str
    principal: Principal
    top_k: int
    mode: str
    terms: tuple[str, ...] = ()
    dense: DenseRetriever | None = None
    dense_settings: DenseSettings | None = None
    rerank: str = ""
    # The ``conceal`` policy applies to this principal: see search.retrieve and disclosure.
    conceal: bool = False
    # How many blocked candidates to load (for the status decision and the audit trace).
    blocked_limit: int = BLOCKED_LIMIT
    # The caller's name for the text, named by an error about it ("query" for a search).
    field: str = "question"
    # Count the question's uncommon words that no readable chunk holds (bm25): an answer
    # reads them, a search does not, so a search does not pay for counting them.
    words: bool = True

    @property
    def min_score(self) -> float | None:
        """The dense cut-off for this request's embedder (``"auto"`` resolved)."""
        if self.dense_settings is None:
            return None
        return self.dense_settings.min_cosine(self.spec)

    @property
    def min_quote_cosine(self) -> float:
        """The quote cosine that rescues evidence short of its margin (``"auto"``
        resolved; no rescue without dense settings)."""
        if self.dense_settings is None:
            return NO_RESCUE
        return self.dense_settings.quote_cosine(self.spec)

    @property
    def spec(self) -> str | None:
        """The embedder of a dense or hybrid request (None in the other modes)."""
        return self.dense.spec if self.dense is not None else None


def validate(question: str, top_k: int, field: str = "question") -> str:
    """The stripped question (or query: errors name ``field``), checked as every search's
    query is (:data:`~glassrag.retrieval.search.MAX_QUERY_CHARS`), and ``top_k`` checked
    against the one engine-wide cap (:data:`~glassrag.settings.MAX_TOP_K`)."""
    question = check_query(question, field=field)
    check_top_k(top_k)
    return question


def run_retrieval(store: Store, lexical: SearchIndex, req: Request,
                  guard: Guard | None = None) -> Retrieval:
    """Retrieve for ``req``; ``guard`` is held around store and index access only (see
    :func:`glassrag.retrieval.search.retrieve`)."""
    return retrieve(store, lexical, req.question, req.principal, req.top_k, req.mode,
                    list(req.terms) or None, blocked_limit=req.blocked_limit, dense=req.dense,
                    dense_settings=req.dense_settings, rerank=req.rerank, conceal=req.conceal,
                    guard=guard, field=req.field, words=req.words)


def add_rewritten(store: Store, lexical: SearchIndex, req: Request, found: Retrieval,
                  rewrite: RewriteStage, guard: Guard | None = None) -> Retrieval:
    """``found`` (the question's retrieval) fused with the rewritten query's.

    Both queries are searched, not the rewrite alone: a rewrite that drifts can add
    candidates but cannot push out what the question's own words found. The rewritten
    query goes through the same retrieve() as the question, roles filtered inside it.
    """
    if rewrite.query is None:
        return found
    try:
        rewritten = run_retrieval(store, lexical,
                                  dataclasses.replace(req, question=rewrite.query), guard)
    except GlassragError as exc:  # e.g. a rewrite of nothing but stop words
        rewrite.fall_back(f"the rewritten query cannot be searched: {exc.message}")
        return found
    return fuse_retrievals(found, rewritten, req.top_k, req.blocked_limit)


def retrieve_with_rewrite(store: Store, lexical: SearchIndex, req: Request,
                          rewrite: bool | RewriteHook, llm: LLMAnswerer | None,
                          guard: Guard | None = None,
                          lap: Callable[[str], None] = lambda stage: None,
                          ) -> tuple[Retrieval, RewriteStage]:
    """The question's retrieval, the rewrite, and the rewritten query's retrieval fused in:
    what ask searches, and what inspect ranks. Sends the rewrite request (when a rewriter
    applies) and nothing else.

    ``guard`` is held around store and index access only: not around the rewrite, the query
    embedding or a reranker (a model call may take seconds); ``lap(stage)`` is called as
    each stage ends, for the trace's timings.
    """
    # The question is retrieved before any rewrite, so a question that cannot be searched
    # fails before a model is asked anything.
    found = run_retrieval(store, lexical, req, guard)
    lap("retrieve")
    stage = run_rewrite(req.question, rewrite, llm, terms=req.terms)
    if stage.latency_ms is not None:
        lap("rewrite")
    if stage.query is not None:
        found = add_rewritten(store, lexical, req, found, stage, guard)
        lap("retrieve")
    return found, stage


def status_and_draft(question: str, found: Retrieval, settings: AnswerSettings,
           dense: DenseRetriever | None = None, min_score: float | None = None,
           min_quote_cosine: float = NO_RESCUE, *, same_query: bool = False,
           ) -> tuple[str, Draft | None]:
    """The true status before any answer is shown: answer only from permitted evidence.
    The draft is the answer's, or the ``no_evidence`` draft saying why (for the trace):
    the answerer's own (no sentence covered enough of the question) or the dense gate's.

    Blocked evidence counts as "matching" only if it would itself pass the answer threshold,
    so a stray shared word in a secret document does not turn no_evidence into blocked.
    In dense and hybrid modes, a hit at or above the cosine threshold is evidence too: when no
    sentence covers the question's words (a paraphrase), the sentence closest in meaning is
    quoted instead; not when a short question's words are covered, only too few of them (a
    near miss). A question naming something no readable document mentions
    (``found.unknown``: names in any mode, uncommon words in bm25) gets no permitted answer,
    nor, in dense and hybrid modes, a quote whose best dense hit does not stand out from the
    question's other dense candidates (``found.dense_stands_out``) unless the quote itself has a
    cosine of at least ``min_quote_cosine`` to the question (:mod:`glassrag.answer.dense_gate`).
    ``same_query``: ``question`` is the query ``found`` was retrieved for, so its vector is
    reused.
    """
    semantic = dense is not None and found.mode in ("dense", "hybrid")
    settings = settings.resolved(found.mode, dense.spec if dense is not None else None)
    refused: Draft | None = None
    if found.hits:
        # A name or word no readable document holds (found.unknown) refuses every quote.
        draft = extractive_answer(question, found.hits, settings,
                                  unknown_names=found.unknown)
        if draft.status != ANSWERED and semantic and dense is not None \
                and not found.unknown and not draft.notes.get(SHORT_QUESTION):
            close = [h for h in found.hits if h.scores.get("dense", -1.0) >= (min_score or 0)]
            if close:
                draft = semantic_answer(question, close, dense.embedder, min_score or 0.0,
                                        settings)
        if draft.status == ANSWERED:
            refused = unnamed_refusal(draft, found.hits, found.rare_names) or refusal(
                question, found, draft, dense.embedder if dense else None, min_quote_cosine,
                found.query_vector if same_query else None)
            if refused is None:
                return ANSWERED, draft
        else:
            refused = draft  # its notes say why: the best coverage against the threshold
    # The refusal's draft goes with BLOCKED as with NO_EVIDENCE: it is built from permitted
    # evidence alone, so whether it is there says nothing about hidden documents.
    if _blocked_would_answer(question, found, settings):
        return BLOCKED, refused
    if semantic and long_enough(question, settings) \
            and any(h.scores.get("dense", -1.0) >= (min_score or 0) for h in found.blocked):
        return BLOCKED, refused
    return NO_EVIDENCE, refused


def decide_or_defer(req: Request, found: Retrieval, settings: AnswerSettings,
                    rewrite: RewriteStage, llm: LLMAnswerer | None,
                    ) -> tuple[Status | None, Draft | None]:
    """The status (and extractive draft) before any answer is shown, or ``(None, None)``
    when a model will answer: with permitted evidence the model's reply decides, so no
    extractive draft is made only to be thrown away (in dense and hybrid modes a draft also
    embeds every candidate sentence). What ask does, and what dry-run reports."""
    if llm is not None and found.hits:
        return None, None
    status, draft = status_and_draft_with_rewrite(req, found, settings, rewrite)
    return Status(status), draft


def ask(store: Store, lexical: SearchIndex, settings: Settings, req: Request,
        answer_settings: AnswerSettings, *, log_path: Path | None = None,
        llm: LLMAnswerer | None = None, lock: Guard | None = None,
        rewrite: bool | RewriteHook = False) -> Answer:
    """Run one question through the pipeline and record its trace.

    ``lock`` guards the store and index only: retrieval's store and index access and the
    trace write hold it; a model (the query embedding, a reranker, the answerer) never
    runs under it. ``rewrite`` (True: with ``llm``; or a callable) adds a rewritten query
    to the retrieval; see :mod:`glassrag.retrieval.rewrite`.
    """
    guard = lock if lock is not None else nullcontext()
    # min_coverage "auto" depends on the mode and embedder; the trace records the number used.
    answer_settings = answer_settings.resolved(req.mode, req.spec)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        t = time.perf_counter()
        timings[name] = round(timings.get(name, 0.0) + (t - clock) * 1000, 3)
        clock = t

    found, rewrite_stage = retrieve_with_rewrite(store, lexical, req, rewrite, llm, guard, lap)
    decided, draft = decide_or_defer(req, found, answer_settings, rewrite_stage, llm)
    verification = Verification(ok=True)
    attempts: list[dict[str, Any]] = []
    blocked_ids = {h.chunk.chunk_id for h in found.blocked}
    if decided is None:
        assert llm is not None  # decide_or_defer defers only to a model
        # The model is asked whenever there is permitted evidence (not only when the
        # extractive check would answer), so under `conceal` a blocked question and an
        # unanswerable one take the same path. No evidence: no call, no key read.
        draft, verification, attempts = llm.answer(
            req.question, found.hits,
            lambda d: verify(d, found.hits, blocked_chunk_ids=blocked_ids),
        )
        lap("answer")
        status = _model_status(req, found, answer_settings, rewrite_stage, draft, verification)
        lap("verify")
    else:
        status = decided
        lap("answer")
        if draft is not None and draft.status == ANSWERED:
            verification = verify(draft, found.hits, blocked_chunk_ids=blocked_ids)
            status = ANSWERED if verification.ok else UNVERIFIED
            attempts = [_extractive_attempt(draft, verification)]
        elif draft is not None:  # a refusal: the trace says why
            attempts = [_extractive_attempt(draft, None)]
        lap("verify")
    citations = verification.citations if (status == ANSWERED and verification.ok) else ()
    reported = disclose(status, found.blocked_count, conceal=req.conceal).status
    assert reported is not None
    text = draft.text if (draft is not None and status == ANSWERED) else REFUSALS[reported]
    # The same evidence whatever the true status, so that under `conceal` a blocked answer
    # and a no_evidence answer cannot be told apart.
    evidence = tuple(found.hits)
    trace_id = new_trace_id()
    trace = build_trace(trace_id, req, settings, answer_settings, found, status, reported,
                        attempts, verification, text, citations, timings, llm,
                        rewrite=rewrite_stage)
    with guard:
        save(store, trace)
    ask_finished(store, settings, trace)
    if log_path is not None:
        _log(log_path, req, status, found, citations)
    return Answer(status=reported, answer=text, citations=citations, evidence=evidence,
                  trace_id=trace_id, question=req.question, mode=found.mode)


def _model_status(req: Request, found: Retrieval, settings: AnswerSettings,
                  rewrite: RewriteStage, draft: Draft | None,
                  verification: Verification) -> Status:
    """The status of a model's reply: unverified unless it verified; its own no_evidence is
    blocked when blocked evidence would have answered the question (or its rewrite)."""
    if draft is None or not verification.ok:
        return UNVERIFIED
    if draft.status == ANSWERED:
        return ANSWERED
    asked = (req.question, *([rewrite.query] if rewrite.query else []))
    return BLOCKED if any(_blocked_would_answer(q, found, settings) for q in asked) \
        else NO_EVIDENCE


def status_and_draft_with_rewrite(req: Request, found: Retrieval, settings: AnswerSettings,
                                  rewrite: RewriteStage) -> tuple[str, Draft | None]:
    """:func:`status_and_draft` for the question, then for the rewritten query if the
    question's own words are not covered: a paraphrase shares few words with the chunk that
    answers it, and the rewrite is what found that chunk. The answer is still verbatim and
    verified; a model answerer is always given the user's question, never the rewrite."""
    min_score, min_quote = req.min_score, req.min_quote_cosine
    # Only the question's own, unfused retrieval carries its vector.
    status, draft = status_and_draft(req.question, found, settings, req.dense, min_score,
                                     min_quote, same_query=True)
    if status == ANSWERED or rewrite.query is None:
        return status, draft
    second, second_draft = status_and_draft(rewrite.query, found, settings, req.dense,
                                            min_score, min_quote)
    if second == ANSWERED:
        return second, second_draft
    return (BLOCKED if BLOCKED in (status, second) else status), draft or second_draft


def _blocked_would_answer(question: str, found: Retrieval, settings: AnswerSettings) -> bool:
    return bool(found.blocked) and (
        extractive_answer(question, found.blocked, settings).status == ANSWERED
    )


def _extractive_attempt(draft: Draft, verification: Verification | None) -> dict[str, Any]:
    """The extractive draft as a trace attempt; without ``verification`` for a refusal,
    which shows nothing to verify."""
    attempt: dict[str, Any] = {
        "answerer": draft.answerer,
        "draft": {"status": draft.status, "text": draft.text,
                  "citations": [{"chunk_id": c.chunk_id, "quote": c.quote}
                                for c in draft.citations],
                  "notes": draft.notes},
    }
    if verification is not None:
        attempt["verification"] = verification.to_dict()
    return attempt


def _candidate(hit: Hit, permitted: bool, selected: bool) -> TraceCandidate:
    c = hit.chunk
    return TraceCandidate(
        chunk_id=c.chunk_id, doc_id=c.doc_id, score=round(hit.score, 6), scores=hit.scores,
        ranks=hit.ranks, matched_terms=hit.matched_terms, line_start=c.line_start,
        line_end=c.line_end, permitted=permitted, selected=selected)


def _evidence_item(hit: Hit) -> TraceEvidence:
    c = hit.chunk
    return TraceEvidence(
        chunk_id=c.chunk_id, doc_id=c.doc_id, source=c.source, title=c.title,
        doc_version=c.doc_version, content_hash=c.content_hash, line_start=c.line_start,
        line_end=c.line_end, page=c.page, score=round(hit.score, 6), text=c.text)


def build_trace(trace_id: str, req: Request, settings: Settings,
                answer_settings: AnswerSettings, found: Retrieval, status: Status,
                reported: Status, attempts: list[dict[str, Any]], verification: Verification,
                text: str, citations: Sequence[Citation], timings: dict[str, float],
                llm: LLMAnswerer | None = None, *,
                rewrite: RewriteStage | None = None) -> Trace:
    """The trace of one ask: every stage's input and outcome, the whole truth."""
    from glassrag.llm.profiles import build_request

    timings["total"] = round(sum(timings.values()), 3)
    if llm is not None:
        request = (attempts[0].get("request") if attempts
                   else llm.preview(req.question, found.hits) if found.hits else None)
    else:
        request = build_request(req.question, found.hits) if found.hits else None
    return Trace(
        trace_id=trace_id,
        created_at=now(),
        principal=TracePrincipal(req.principal.principal_id, req.principal.roles,
                                 req.principal.admin),
        question=req.question,
        rewrite=(rewrite or RewriteStage(req.question)).to_dict(),
        settings=TraceSettings(
            mode=found.mode, top_k=req.top_k, terms=req.terms,
            answerer=llm.name if llm is not None else "extractive",
            llm=llm.endpoint.describe() if llm is not None else None,
            min_coverage=answer_settings.coverage(req.mode, req.spec),
            max_sentences=answer_settings.max_sentences,
            fusion_weights=found.fusion_weights,
            max_short_quotes=answer_settings.max_short_quotes,
            context_chars=answer_settings.context_chars),
        disclosure=settings.permissions.disclosure,
        query_terms=found.query_terms,
        candidates=(*(_candidate(h, True, True) for h in found.hits),
                    *(_candidate(h, False, False) for h in found.blocked)),
        blocked_count=found.blocked_count,
        blocked_chunk_ids=tuple(h.chunk.chunk_id for h in found.blocked),
        evidence=tuple(_evidence_item(h) for h in found.hits),
        request=request,
        attempts=tuple(attempts),
        verification=verification,
        status=status,
        reported_status=reported,
        answer=text,
        citations=tuple(citations),
        timings_ms=timings,
    )


def _log(path: Path, req: Request, status: str, found: Retrieval,
         citations: Sequence[Citation]) -> None:
    """The retrieval log (``ask --log``): one JSON line per question."""
    line = {"question": req.question, "roles": list(req.principal.roles), "status": status,
            "top_score": round(found.hits[0].score, 6) if found.hits else 0.0,
            "citations": [c.source for c in citations]}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")
