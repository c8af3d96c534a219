"""Recheck: a past question asked again, as the principal who asked it, with its settings.

The trace of the first ask records the principal (id, roles, admin), the retrieval mode,
top_k, explicit terms, the answerer and the rewrite stage. The new ask uses all of them, so
what changed between the two answers is the knowledge base, not how it was asked; the new
ask writes its own trace. The answer settings (``[answer] min_coverage``, ``max_sentences``,
``max_short_quotes``, ``context_chars``) are today's, and a note says so when they differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from glassrag.audit.trace_reads import stored_trace
from glassrag.records import Principal
from glassrag.trace import Trace

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase

CALLABLE_REWRITE = ("the question was first rewritten by a function passed to ask, which "
                    "cannot be replayed: it is asked again without a rewrite")


@dataclass(frozen=True)
class AnswerSide:
    """One of the two answers: the status its asker was told and the true one."""

    trace_id: str
    created_at: str
    status: str
    true_status: str
    answer: str
    citations: list[dict[str, Any]]

    @classmethod
    def of(cls, trace: Trace) -> AnswerSide:
        return cls(trace.trace_id, trace.created_at, trace.reported_status.value,
                   trace.status.value, trace.answer, [c.to_dict() for c in trace.citations])

    def to_dict(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "created_at": self.created_at,
                "status": self.status, "true_status": self.true_status,
                "answer": self.answer, "citations": self.citations}


@dataclass(frozen=True)
class Recheck:
    question: str
    principal: dict[str, Any]
    old: AnswerSide
    new: AnswerSide
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def changed(self) -> bool:
        """Whether the asker would now be told something else (status, text or sources)."""
        def cited(side: AnswerSide) -> list[tuple[Any, ...]]:
            return [(c["doc_id"], c.get("content_hash"), c["line_start"], c["line_end"],
                     c["quote"]) for c in side.citations]
        return (self.old.status, self.old.answer, cited(self.old)) != (
            self.new.status, self.new.answer, cited(self.new))

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "principal": self.principal,
                "changed": self.changed, "old": self.old.to_dict(), "new": self.new.to_dict(),
                "notes": list(self.notes)}


def ask_options(trace: Trace) -> tuple[dict[str, Any], list[str]]:
    """The keyword arguments of ``kb.ask`` that repeat how ``trace`` was asked, and notes on
    what cannot be repeated."""
    recorded = trace.settings
    notes: list[str] = []
    llm = None
    if recorded.answerer != "extractive":
        llm = (recorded.llm or {}).get("profile")
    stage = trace.rewrite or {}
    rewriter = stage.get("rewriter") or ""
    rewrite = stage.get("status") in ("used", "unchanged", "failed")
    if rewrite and rewriter.startswith("callable:"):
        rewrite = False
        notes.append(CALLABLE_REWRITE)
    options = {"top_k": recorded.top_k or None, "mode": recorded.mode or None,
               "terms": list(recorded.terms) or None, "llm": llm, "rewrite": rewrite}
    return options, notes


def recheck(kb: KnowledgeBase, trace_id: str) -> Recheck:
    """Ask the question of trace ``trace_id`` again as its principal; NotFound if there is
    no such trace. For the local operator and admins: it acts as another principal."""
    old = stored_trace(kb, trace_id)
    recorded = old.principal
    principal = Principal(recorded.principal_id, roles=recorded.roles, admin=recorded.admin)
    options, notes = ask_options(old)
    answer = kb.ask(old.question, principal=principal, **options)
    assert answer.trace_id is not None  # every ask past validation writes a trace
    new = stored_trace(kb, answer.trace_id)
    for key in ("min_coverage", "max_sentences", "max_short_quotes", "context_chars"):
        then, now = getattr(old.settings, key), getattr(new.settings, key)
        # A trace written before the key existed reads it as None: nothing to compare.
        if then is not None and then != now:
            notes.append(f"[answer] {key} was {then} and is now {now}")
    asker = {"principal_id": recorded.principal_id, "roles": list(recorded.roles),
             "admin": recorded.admin}
    return Recheck(old.question, asker, AnswerSide.of(old), AnswerSide.of(new), tuple(notes))
