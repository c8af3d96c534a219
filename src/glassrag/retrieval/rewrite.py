"""Query rewriting: the question turned into a search query before retrieval.

It runs only when switched on (``[llm] rewrite_query``, ``ask --rewrite``,
``kb.ask(rewrite=True)``) *and* there is a rewriter: the configured model, or a callable a
library user passed as ``kb.ask(rewrite=fn)``. Without one it is skipped, and the trace says
why; no request is sent and no key is read.

The model receives the user's question and nothing else: no evidence, titles or anything
from the knowledge base. What it returns is only used as a second query through the same
filtered search as the question, so the rewrite cannot widen what a principal may read.

A rewrite that fails (transport error, refusal, empty, malformed or over-long reply, or a
callable that raises) never fails the ask: the question is searched as asked and the error
is kept in the trace's ``rewrite`` stage.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from glassrag.llm.client import LLMAnswerer, extract_reply
from glassrag.llm.prompt import ReplyError, read_rewrite
from glassrag.records import Fusion, Hit
from glassrag.retrieval.fusion import RRF_K, fuse
from glassrag.retrieval.search import Retrieval

RewriteHook = Callable[[str], str]
MAX_REWRITE_CHARS = 300
# Score and rank keys on fused hits: the rewritten query's own retrievers get this prefix
# (the question's keep their plain names, which the status decision reads), and the fusion of
# the two queries is recorded under FUSED.
PREFIX = "rewritten:"
FUSED = "queries:rrf"
NO_LLM = ("no LLM is configured (pass --llm PROFILE or set [llm] profile); the question is "
          "searched as asked")
EXPLICIT_TERMS = "explicit terms are searched, not the question"
_QUOTES = "\"'`“”‘’「」『』 "


@dataclass
class RewriteStage:
    """The ``rewrite`` stage of a trace.

    ``status``: ``off`` (not switched on), ``skipped`` (switched on, nothing to rewrite with),
    ``dry_run`` (the request is shown, not sent), ``used`` (the rewritten query was searched
    too), ``unchanged`` (the rewrite is the question itself) or ``failed`` (the question was
    searched alone; ``error`` says why).
    """

    question: str
    status: str = "off"
    rewriter: str | None = None
    rewritten_query: str | None = None
    model: str | None = None
    latency_ms: float | None = None
    error: str | None = None
    skipped_reason: str | None = None
    request: dict[str, Any] | None = None
    raw_response: Any = None

    @property
    def query(self) -> str | None:
        """The query to search alongside the question, if any."""
        return self.rewritten_query if self.status == "used" else None

    def fall_back(self, error: str) -> None:
        self.status, self.error = "failed", error

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _plan(question: str, wanted: bool | RewriteHook, llm: LLMAnswerer | None,
          terms: Sequence[str]) -> RewriteStage:
    """Whether a rewrite would run and with what; fills ``rewriter`` or says why not."""
    stage = RewriteStage(question)
    if wanted is False:
        return stage
    if terms:
        stage.status, stage.skipped_reason = "skipped", EXPLICIT_TERMS
    elif callable(wanted):  # passed explicitly, so it runs with or without a model
        stage.rewriter = "callable:" + getattr(wanted, "__qualname__", type(wanted).__name__)
    elif llm is None:
        stage.status, stage.skipped_reason = "skipped", NO_LLM
    else:
        stage.rewriter = llm.name
    return stage


def run_rewrite(question: str, wanted: bool | RewriteHook, llm: LLMAnswerer | None, *,
                terms: Sequence[str] = ()) -> RewriteStage:
    """Ask the rewriter for a search query; never raises for the rewriter's failures."""
    stage = _plan(question, wanted, llm, terms)
    if stage.rewriter is None:
        return stage
    start = time.perf_counter()
    try:
        if callable(wanted):
            raw = wanted(question)
        else:
            assert llm is not None  # _plan named it the rewriter
            raw = _ask_model(stage, llm)
        query = checked(raw)
    # Whatever goes wrong, including in a caller's own hook, the question is still
    # searched: a rewrite is a hint for retrieval, never a reason for an ask to fail.
    except ReplyError as exc:
        stage.fall_back(str(exc))
    except Exception as exc:  # noqa: BLE001
        stage.fall_back(getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
    else:
        stage.rewritten_query = query
        same = query.casefold() == " ".join(question.split()).casefold()
        stage.status = "unchanged" if same else "used"
    stage.latency_ms = round((time.perf_counter() - start) * 1000, 3)
    return stage


def _ask_model(stage: RewriteStage, llm: LLMAnswerer) -> str:
    body, exchange, model = llm.rewrite(stage.question)
    stage.request, stage.model, stage.raw_response = body, model, exchange.body
    if exchange.error is not None:
        raise ReplyError(exchange.error)
    return read_rewrite(extract_reply(llm.endpoint.api, exchange.body))


def checked(raw: object) -> str:
    """One line of query text, or ReplyError: not a string, empty, or longer than a query."""
    if not isinstance(raw, str):
        raise ReplyError(f"the rewriter returned {type(raw).__name__}, not a string")
    query = " ".join(raw.split()).strip(_QUOTES)
    if not query:
        raise ReplyError("the rewritten query is empty")
    if len(query) > MAX_REWRITE_CHARS:
        raise ReplyError(f"the rewritten query is {len(query)} characters long; at most "
                         f"{MAX_REWRITE_CHARS} are used (a reply that long is not a query)")
    return query


def preview_rewrite(question: str, wanted: bool | RewriteHook, llm: LLMAnswerer | None, *,
                    terms: Sequence[str] = ()) -> dict[str, Any]:
    """What ``--dry-run`` shows: the rewrite request that would be sent. Sends nothing,
    reads no key, and does not call a callable hook either (it may do anything)."""
    stage = _plan(question, wanted, llm, terms)
    if stage.rewriter is not None:
        stage.status = "dry_run"
        if llm is not None and not callable(wanted):
            stage.request = llm.rewrite_preview(question)
    return stage.to_dict()


def fuse_retrievals(question: Retrieval, rewritten: Retrieval, top_k: int,
                    blocked_limit: int, k: int = RRF_K) -> Retrieval:
    """The question's and the rewritten query's retrievals fused by reciprocal rank fusion,
    permitted and blocked candidates each on their own.

    It only merges what two filtered searches returned, so it cannot add a chunk that neither
    search let through. RRF uses ranks alone, so the two queries' scores (of different
    lengths and words) need no calibration, and a chunk both queries find rises to the top.
    """
    return Retrieval(
        question.mode,
        tuple(dict.fromkeys(question.query_terms + rewritten.query_terms)),
        _fused(question.hits, rewritten.hits, k)[:top_k],
        # As in hybrid search: the larger count, a lower bound on the union.
        max(question.blocked_count, rewritten.blocked_count),
        _fused(question.blocked, rewritten.blocked, k)[:blocked_limit],
        # What the user's question names stays unknown whatever the rewrite says.
        unknown_names=question.unknown_names,
        # A word has synonyms: the rewrite is there to find them. A word it kept stays unknown.
        unknown_words=tuple(w for w in question.unknown_words if w in rewritten.unknown_words),
        rare_names=question.rare_names,
        # The dense gate's inputs: the evidence stands out if it does for either query (the
        # rewrite is there to find what the question's words missed); the vector stays the
        # question's, which the answer is compared with.
        dense_margin=_larger(question.dense_margin, rewritten.dense_margin),
        dense_min_margin=question.dense_min_margin,
        fusion_weights=question.fusion_weights,
        query_vector=question.query_vector,
    )


def _larger(a: float | None, b: float | None) -> float | None:
    return a if b is None else b if a is None else max(a, b)


def _fused(first: Sequence[Hit], second: Sequence[Hit], k: int) -> list[Hit]:
    by_first = {h.chunk.chunk_id: h for h in first}
    by_second = {h.chunk.chunk_id: h for h in second}
    ranking = fuse({"question": [(cid, h.score) for cid, h in by_first.items()],
                    "rewritten": [(cid, h.score) for cid, h in by_second.items()]},
                   Fusion.RRF, k=k)
    hits = []
    for fused in ranking:
        a, b = by_first.get(fused.key), by_second.get(fused.key)
        base = a if a is not None else b
        assert base is not None  # fusion only returns ids from the two lists
        scores, ranks = (dict(a.scores), dict(a.ranks)) if a is not None else ({}, {})
        terms = a.matched_terms if a is not None else ()
        if b is not None:
            scores.update({PREFIX + name: v for name, v in b.scores.items()})
            ranks.update({PREFIX + name: r for name, r in b.ranks.items()})
            terms = tuple(dict.fromkeys(terms + b.matched_terms))
        scores[FUSED], ranks[FUSED] = fused.score, fused.rank
        hits.append(dataclasses.replace(base, score=fused.score, matched_terms=terms,
                                        scores=scores, ranks=ranks))
    return hits
