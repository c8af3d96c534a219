"""Why not: the first stage of an ask that dropped a document, or a passage of it.

The stages, in the order an ask meets them:

1. ``not_in_knowledge_base``: no such document (with the file's last ingest failure or
   skip, from the failure log);
2. ``not_readable``: the principal's roles do not include any of the document's (the role
   filter runs inside the search, before anything is ranked);
3. ``no_query_term``: none of the question's analysed terms occurs in it (bm25 and overlap;
   dense retrieval needs no shared term);
4. ``below_cutoff``: it ranked below the hits the answer reads (its rank and score against
   the last kept hit);
5. ``below_evidence_threshold``: it was read, but its best sentence covers less of the
   question than ``[answer] min_coverage`` (or, in dense and hybrid modes, its similarity
   is below ``[dense] min_score``);
6. ``not_selected``: it passed every check and the extractive answerer quoted other hits;
   or ``cited``: the answer cites it.

Stages 1 and 2 tell whether a document exists. Only ``as_admin`` gets them as they are;
anyone else gets, for a document they may not read, exactly the reply for one that does not
exist, with nothing from the failure log either (a failed file's path is a document's
existence too). The answer stages follow the extractive answerer; a model answerer makes
its own choice among the kept hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from glassrag.answer.extractive import extractive_answer, split_sentences
from glassrag.answer.scoring import coverage
from glassrag.audit import failure_log
from glassrag.errors import InvalidInput
from glassrag.pipeline import validate
from glassrag.records import ANSWERED, Chunk, Hit, Principal
from glassrag.retrieval.scorers import overlap_terms
from glassrag.settings import MAX_TOP_K
from glassrag.text.analysis import analyze, unique_terms

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase

NOT_IN_KB = "not_in_knowledge_base"
NOT_READABLE = "not_readable"
NO_QUERY_TERM = "no_query_term"
BELOW_CUTOFF = "below_cutoff"
BELOW_THRESHOLD = "below_evidence_threshold"
NOT_SELECTED = "not_selected"
CITED = "cited"
SHOWN_TERMS = 50  # of the document's side: enough to see what it is about


@dataclass(frozen=True)
class WhyNot:
    question: str
    doc_id: str
    lines: tuple[int, int] | None
    stage: str
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "doc_id": self.doc_id,
                "lines": list(self.lines) if self.lines else None, "stage": self.stage,
                "reason": self.reason, "details": self.details}


def parse_lines(value: str | Sequence[int] | None) -> tuple[int, int] | None:
    """``"A-B"``, ``"A"`` or ``(A, B)`` as a 1-based inclusive line range."""
    if value is None:
        return None
    try:
        if isinstance(value, str):
            first, _, last = value.strip().partition("-")
            span = (int(first), int(last) if last else int(first))
        else:
            span = (int(value[0]), int(value[-1]))
    except (ValueError, IndexError, TypeError):
        raise InvalidInput(f"lines: {value!r} is not a line range such as 12-20",
                           field="lines") from None
    if span[0] < 1 or span[1] < span[0]:
        raise InvalidInput(f"lines: {value!r} must be A-B with 1 <= A <= B", field="lines")
    return span


def why_not(kb: KnowledgeBase, question: str, doc_id: str, *,
            lines: str | Sequence[int] | None = None, principal: Principal | None = None,
            as_admin: bool = False, mode: str | None = None,
            top_k: int | None = None) -> WhyNot:
    """The first stage that dropped ``doc_id`` (lines ``lines`` of it, if given) from the
    answer to ``question`` asked by ``principal`` (default: public only).

    ``as_admin`` tells the reader everything (the role stage, ingest failures); otherwise
    the reader is taken to be ``principal`` itself, who learns nothing of a document it may
    not read. Writes no trace.
    """
    principal = principal or Principal()
    top_k = kb.settings.answer.top_k if top_k is None else top_k
    question = validate(question, top_k)
    span = parse_lines(lines)
    with kb.lock:
        doc = kb.store.document(doc_id)
        failure = failure_log.lookup(kb.store, doc_id) if doc is None and as_admin else None
    if doc is None or not principal.can_read(doc.roles):
        if not as_admin:
            return WhyNot(question, doc_id, span, NOT_IN_KB,
                          f"there is no document {doc_id!r} you may read")
        if doc is None:
            return _missing(question, doc_id, span, failure)
        return WhyNot(question, doc_id, span, NOT_READABLE,
                      f"principal {principal.principal_id!r} (roles "
                      f"{', '.join(principal.roles)}) may not read it: its roles are "
                      f"{', '.join(doc.roles)}",
                      {"principal_roles": list(principal.roles),
                       "document_roles": list(doc.roles)})
    chunks = _passage(kb.chunks(doc_id), doc_id, span)
    return _Ask(kb, question, principal, mode or kb.settings.search.mode, top_k).explain(
        doc_id, span, chunks)


def _missing(question: str, doc_id: str, span: tuple[int, int] | None,
             failure: failure_log.FailureRecord | None) -> WhyNot:
    if failure is None:
        return WhyNot(question, doc_id, span, NOT_IN_KB,
                      f"there is no document {doc_id!r} in the knowledge base, and no ingest "
                      "failure or skip is recorded for it")
    what = "failed" if failure.outcome == failure_log.FAILED else "was skipped"
    return WhyNot(question, doc_id, span, NOT_IN_KB,
                  f"there is no document {doc_id!r}: its file {failure.path} {what} at the "
                  f"last ingest ({failure.recorded_at}): {failure.error}",
                  {"ingest": failure.to_dict()})


def _passage(chunks: list[Chunk], doc_id: str, span: tuple[int, int] | None) -> list[Chunk]:
    if span is None:
        return chunks
    inside = [c for c in chunks if c.line_start <= span[1] and c.line_end >= span[0]]
    if not inside:
        covered = f"{chunks[0].line_start}-{chunks[-1].line_end}" if chunks else "none"
        raise InvalidInput(f"lines: document {doc_id!r} has no chunk on lines "
                           f"{span[0]}-{span[1]} (its chunks cover lines {covered})",
                           field="lines")
    return inside


class _Ask:
    """The retrieval and answer stages for one question, as ``kb.ask`` would run them."""

    def __init__(self, kb: KnowledgeBase, question: str, principal: Principal, mode: str,
                 top_k: int) -> None:
        self.kb, self.question, self.principal = kb, question, principal
        self.mode, self.top_k = mode, top_k
        answer = kb.settings.answer
        side = kb.dense(None) if mode in ("dense", "hybrid") else None
        spec = side.spec if side is not None else None
        self.answer_settings = answer.resolved(mode, spec)
        # The extractive answerer reads only its first max_hits hits; a model reads them all.
        model = kb.settings.llm.profile is not None
        self.cut_off = top_k if model else min(top_k, self.answer_settings.max_hits)

    def explain(self, doc_id: str, span: tuple[int, int] | None,
                chunks: list[Chunk]) -> WhyNot:
        ids = {c.chunk_id for c in chunks}
        ranked = self.kb.search(self.question, principal=self.principal, top_k=MAX_TOP_K,
                                mode=self.mode)
        terms = list(ranked.query_terms)
        missing_terms = self._no_query_term(chunks, terms)
        if missing_terms is not None:
            return WhyNot(self.question, doc_id, span, NO_QUERY_TERM,
                          "none of the question's analysed terms occurs in it", missing_terms)
        rank = next((n for n, h in enumerate(ranked.hits, start=1) if h.chunk.chunk_id in ids),
                    None)
        kept = self.kb.search(self.question, principal=self.principal, top_k=self.top_k,
                              mode=self.mode).hits[: self.cut_off]
        mine = [h for h in kept if h.chunk.chunk_id in ids]
        if not mine:
            return self._below_cutoff(doc_id, span, ranked.hits, rank, kept)
        return self._answer_stage(doc_id, span, kept, mine, chunks)

    def _no_query_term(self, chunks: list[Chunk], terms: list[str]) -> dict[str, Any] | None:
        """The analysed terms of both sides when they share none (lexical modes only)."""
        if self.mode not in ("bm25", "overlap"):
            return None
        if self.mode == "overlap":
            terms = unique_terms(overlap_terms(self.question))
            sides = [set(overlap_terms(c.title + " " + c.text)) for c in chunks]
        else:
            sides = _indexed_terms(self.kb, chunks)
        if any(set(terms) & side for side in sides):
            return None
        document_terms = sorted(set().union(*sides))
        return {"mode": self.mode, "query_terms": terms,
                "document_terms": document_terms[:SHOWN_TERMS],
                "document_term_count": len(document_terms)}

    def _below_cutoff(self, doc_id: str, span: tuple[int, int] | None, ranked: list[Hit],
                      rank: int | None, kept: list[Hit]) -> WhyNot:
        last = kept[-1] if kept else None
        details: dict[str, Any] = {
            "mode": self.mode, "rank": rank, "cut_off": self.cut_off,
            "score": round(ranked[rank - 1].score, 6) if rank else None,
            "last_kept": ({"rank": len(kept), "chunk_id": last.chunk.chunk_id,
                           "score": round(last.score, 6)} if last else None),
        }
        if rank is None:
            reason = (f"it is not among the first {len(ranked)} ranked hits; the answer "
                      f"reads the first {self.cut_off}")
        else:
            reason = (f"it ranked {rank} with score {ranked[rank - 1].score:.4f}; the answer "
                      f"reads the first {self.cut_off}")
        if last is not None:
            reason += f", the last of which scored {last.score:.4f}"
        return WhyNot(self.question, doc_id, span, BELOW_CUTOFF, reason, details)

    def _answer_stage(self, doc_id: str, span: tuple[int, int] | None, kept: list[Hit],
                      mine: list[Hit], chunks: list[Chunk]) -> WhyNot:
        draft = extractive_answer(self.question, kept, self.answer_settings)
        ids = {c.chunk_id for c in chunks}
        rank = kept.index(mine[0]) + 1
        if draft.status == ANSWERED and any(c.chunk_id in ids for c in draft.citations):
            return WhyNot(self.question, doc_id, span, CITED,
                          f"it was not dropped: it ranked {rank} and the answer cites it",
                          {"rank": rank})
        best = self._best_coverage(mine, draft.notes)
        # The share the answerer required of this question (more for a short question).
        threshold = float(draft.notes["threshold"])
        similarity = max((h.scores.get("dense", -1.0) for h in mine), default=-1.0)
        min_score = self.kb.settings.dense.min_cosine()
        semantic = self.mode in ("dense", "hybrid") and "dense" in mine[0].scores
        details: dict[str, Any] = {"rank": rank, "coverage": round(best, 4),
                                   "min_coverage": threshold}
        if semantic:
            details.update(similarity=round(similarity, 4), min_score=min_score)
        if best < threshold and not (semantic and similarity >= min_score):
            reason = (f"it ranked {rank}, but its best sentence covers {best:.2f} of the "
                      f"question's terms; the threshold is {threshold:.2f}")
            if semantic:
                reason += f", and its similarity {similarity:.3f} is below {min_score:.3f}"
            return WhyNot(self.question, doc_id, span, BELOW_THRESHOLD, reason, details)
        chosen = [c.chunk_id for c in draft.citations] if draft.status == ANSWERED else []
        details["answer_cites"] = chosen
        return WhyNot(self.question, doc_id, span, NOT_SELECTED,
                      f"it ranked {rank} and its best sentence covers {best:.2f} of the "
                      f"question's terms, but the answer quotes "
                      f"{', '.join(chosen) or 'nothing'} instead", details)

    def _best_coverage(self, hits: list[Hit], notes: dict[str, Any]) -> float:
        """The best sentence coverage in ``hits``, weighted as the answer weighted terms."""
        terms = unique_terms(analyze(self.question))
        weights = {t: float(w) for t, w in (notes.get("term_weights") or {}).items()}
        best = 0.0
        for hit in hits:
            text = hit.chunk.text
            for start, end in split_sentences(text):
                best = max(best, coverage(terms, set(analyze(text[start:end])), weights))
        return best


def _indexed_terms(kb: KnowledgeBase, chunks: list[Chunk]) -> list[set[str]]:
    """The tokens the lexical index holds for each chunk (what bm25 matches against)."""
    ids = [c.chunk_id for c in chunks]
    marks = ",".join("?" * len(ids))
    with kb.lock:
        rows = dict(kb.store.db.execute(
            f"SELECT chunk_id, tokens FROM chunks WHERE chunk_id IN ({marks})", ids).fetchall())
    return [set(rows.get(i, "").split()) for i in ids]
