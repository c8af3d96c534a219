"""Stale answers: past answers whose citations no longer hold in the current documents.

A trace records, for every citation, the document version, its content hash and the lines
quoted. A citation no longer holds when its document was deleted, when the quoted lines
were changed (an edit elsewhere in the document only moves them), or when the document's
roles changed so that the principal who asked may no longer read it. Each stale citation
comes with the cited lines of the old version against the lines they became, as a diff.

These listings name principals, questions and document text of any role: they are for the
local operator and admins only (the HTTP routes check that).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from glassrag.answer.verify import normalize_for_match
from glassrag.audit.line_diff import FollowedLines, follow_lines, unified_diff
from glassrag.audit.trace_reads import (
    AnsweredRow,
    answered,
    answered_citing,
    details,
    parse_since,
)
from glassrag.records import Document, Principal
from glassrag.store.database import Store

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase

LINES_CHANGED = "lines_changed"
DOCUMENT_DELETED = "document_deleted"
NO_LONGER_READABLE = "no_longer_readable"


@dataclass(frozen=True)
class StaleCitation:
    """One citation of a past answer that no longer holds, and why (``reasons``)."""

    number: int  # 1-based, as the answer listed it
    chunk_id: str
    doc_id: str
    source: str
    quote: str
    reasons: tuple[str, ...]
    cited_version: int
    current_version: int | None  # None: the document is gone
    cited_lines: tuple[int, int]  # file lines of the cited version
    current_lines: tuple[int, int] | None  # the lines they became (end < start: deleted)
    old_lines: tuple[str, ...] = ()
    new_lines: tuple[str, ...] = ()
    diff: str = ""
    quote_still_present: bool = False
    current_roles: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number, "chunk_id": self.chunk_id, "doc_id": self.doc_id,
            "source": self.source, "quote": self.quote, "reasons": list(self.reasons),
            "cited_version": self.cited_version, "current_version": self.current_version,
            "cited_lines": list(self.cited_lines),
            "current_lines": list(self.current_lines) if self.current_lines else None,
            "old_lines": list(self.old_lines), "new_lines": list(self.new_lines),
            "diff": self.diff, "quote_still_present": self.quote_still_present,
            "current_roles": None if self.current_roles is None else list(self.current_roles),
        }


@dataclass(frozen=True)
class StaleAnswer:
    trace_id: str
    created_at: str
    principal: dict[str, Any]
    question: str
    answer: str
    citations: tuple[StaleCitation, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "created_at": self.created_at,
                "principal": self.principal, "question": self.question, "answer": self.answer,
                "stale_citations": [c.to_dict() for c in self.citations]}


def stale_answers(kb: KnowledgeBase, *, since: str | None = None) -> list[StaleAnswer]:
    """Every answered trace (asked at or after ``since``, a date or ISO date-time) with at
    least one citation that no longer holds, oldest first."""
    cutoff = parse_since(since) if since else None
    with kb.lock:
        return list(_Checker(kb.store).stale(answered(kb.store, cutoff)))


def count_stale(store: Store, doc_ids: Collection[str]) -> int:
    """How many answered traces cite one of ``doc_ids`` in a way that no longer holds
    (the ingest report's ``stale_answers``; the caller holds the store's lock)."""
    if not doc_ids:
        return 0
    rows = {r.trace_id: r for r in answered_citing(store, doc_ids)}
    return sum(1 for _ in _Checker(store).stale(rows.values()))


class _Checker:
    """Checks citations against the current documents, each document and text read once."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._docs: dict[str, Document | None] = {}
        self._texts: dict[str, str | None] = {}

    def stale(self, rows: Iterable[AnsweredRow]) -> Iterable[StaleAnswer]:
        for row in rows:
            principal = _principal(row.principal)
            suspects = [(n, c) for n, c in enumerate(row.citations, start=1)
                        if not self._holds_quickly(c, principal)]
            if not suspects:
                continue
            info = details(self.store, row.trace_id)
            evidence = {e["chunk_id"]: e for e in info["evidence"]}
            found = [s for s in (self._check(n, c, principal, evidence.get(c["chunk_id"]))
                                 for n, c in suspects) if s is not None]
            if found:
                yield StaleAnswer(row.trace_id, row.created_at, row.principal,
                                  info["question"], info["answer"], tuple(found))

    def _doc(self, doc_id: str) -> Document | None:
        if doc_id not in self._docs:
            self._docs[doc_id] = self.store.document(doc_id)
        return self._docs[doc_id]

    def _text(self, content_hash: str) -> str | None:
        if content_hash not in self._texts:
            self._texts[content_hash] = self.store.version_text(content_hash)
        return self._texts[content_hash]

    def _holds_quickly(self, citation: dict[str, Any], principal: Principal) -> bool:
        """The common case, decided without reading any text: same version, still readable."""
        doc = self._doc(citation["doc_id"])
        return (doc is not None and doc.content_hash == citation.get("content_hash")
                and principal.can_read(doc.roles))

    def _check(self, number: int, citation: dict[str, Any], principal: Principal,
               evidence: dict[str, Any] | None) -> StaleCitation | None:
        doc = self._doc(citation["doc_id"])
        reasons = []
        if doc is None:
            reasons.append(DOCUMENT_DELETED)
        elif not principal.can_read(doc.roles):
            reasons.append(NO_LONGER_READABLE)
        old_text = self._text(citation.get("content_hash", "")) or ""
        new_text = self._text(doc.content_hash) if doc is not None else None
        start, end = _text_range(citation, evidence, old_text, doc)
        followed = follow_lines(old_text, new_text if new_text is not None else "", start, end)
        if doc is not None and doc.content_hash != citation.get("content_hash") and (
                followed.changed or new_text is None):
            reasons.append(LINES_CHANGED)
        if not reasons:
            return None
        return _stale_citation(number, citation, tuple(reasons), doc, followed, new_text)


def _principal(recorded: dict[str, Any]) -> Principal:
    return Principal(recorded.get("principal_id", "anonymous"), roles=recorded.get("roles", ()),
                     admin=bool(recorded.get("admin")))


def _text_range(citation: dict[str, Any], evidence: dict[str, Any] | None, old_text: str,
                doc: Document | None) -> tuple[int, int]:
    """The cited lines as lines of the version's text (citations count file lines, which
    include front matter): the offset is where the cited chunk's text sits in that version.
    A chunk whose lines do not map onto its text (a JSONL record) is cited whole."""
    offset = doc.line_offset if doc is not None else 0
    if evidence is not None and evidence.get("text"):
        position = old_text.find(evidence["text"])
        if position >= 0:
            first = old_text.count("\n", 0, position) + 1
            offset = int(evidence["line_start"]) - first
            newlines = evidence["text"].count("\n")
            if newlines != int(evidence["line_end"]) - int(evidence["line_start"]):
                return first, first + newlines
    return int(citation["line_start"]) - offset, int(citation["line_end"]) - offset


def _stale_citation(number: int, citation: dict[str, Any], reasons: tuple[str, ...],
                    doc: Document | None, followed: FollowedLines,
                    new_text: str | None) -> StaleCitation:
    version = citation.get("doc_version", 0)
    new_lines = followed.new_lines if doc is not None else ()
    current = None
    if doc is not None:
        current = (followed.new_start + doc.line_offset, followed.new_end + doc.line_offset)
    old_label = f"{citation['doc_id']} v{version} lines {citation['line_start']}-" \
                f"{citation['line_end']}"
    new_label = (f"{citation['doc_id']} v{doc.version} lines {current[0]}-{current[1]}"
                 if doc is not None and current is not None else f"{citation['doc_id']} (deleted)")
    quote = citation.get("quote", "")
    present = new_text is not None and normalize_for_match(quote) in normalize_for_match(new_text)
    return StaleCitation(
        number=number, chunk_id=citation["chunk_id"], doc_id=citation["doc_id"],
        source=citation.get("source", ""), quote=quote, reasons=reasons,
        cited_version=version, current_version=doc.version if doc is not None else None,
        cited_lines=(int(citation["line_start"]), int(citation["line_end"])),
        current_lines=current, old_lines=followed.old_lines, new_lines=new_lines,
        diff=unified_diff(followed.old_lines, new_lines, old_label, new_label),
        quote_still_present=present,
        current_roles=tuple(doc.roles) if doc is not None else None,
    )
