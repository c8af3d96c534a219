"""The trace of one ``ask``: a typed record of every stage, from question to verified answer.

:class:`Trace` holds the whole truth (true status, blocked chunk ids, the model's raw
exchanges, timings) and serialises to the JSON kept in SQLite and shown to auditors with
:meth:`Trace.to_dict`; :meth:`Trace.from_dict` reads it back (traces written before a key
existed get its empty value). What a non-admin sees of it is decided elsewhere, in one
place: :func:`glassrag.store.traces.redact`.

The model's request body, its attempts and the rewrite stage stay JSON objects: their shape
is the model API's and the answerer's, and the trace keeps them as they were.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from glassrag.records import Citation, Status, Verification

JSON = dict[str, Any]


def _plain(value: Any) -> Any:
    """Dataclasses as dicts in field order, tuples as lists: the trace's JSON form."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class TracePrincipal:
    principal_id: str
    roles: tuple[str, ...]
    admin: bool


@dataclass(frozen=True)
class TraceSettings:
    """What the ask ran with: the mode actually searched and the answerer."""

    mode: str
    top_k: int
    terms: tuple[str, ...]
    answerer: str
    llm: JSON | None  # the model endpoint (profile, URL, model, key variable name)
    # The answer settings; None in a trace written before the setting existed.
    min_coverage: float | None
    max_sentences: int | None
    # Hybrid: each retriever's weight in the fusion (Retrieval.fusion_weights); else None.
    fusion_weights: dict[str, float] | None = None
    max_short_quotes: int | None = None
    context_chars: int | None = None


@dataclass(frozen=True)
class TraceCandidate:
    """A ranked chunk, permitted (and selected as evidence) or blocked."""

    chunk_id: str
    doc_id: str
    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
    matched_terms: tuple[str, ...] = ()
    line_start: int = 0
    line_end: int = 0
    permitted: bool = True
    selected: bool = False


@dataclass(frozen=True)
class TraceEvidence:
    """A permitted chunk the answer could draw on, with the document version it came from."""

    chunk_id: str
    doc_id: str
    source: str = ""
    title: str = ""
    doc_version: int = 0
    content_hash: str = ""
    line_start: int = 0
    line_end: int = 0
    page: int | None = None
    score: float = 0.0
    text: str = ""


@dataclass(frozen=True)
class Trace:
    trace_id: str
    created_at: str
    principal: TracePrincipal
    question: str
    rewrite: JSON | None
    settings: TraceSettings
    disclosure: str
    query_terms: tuple[str, ...]
    candidates: tuple[TraceCandidate, ...]
    blocked_count: int
    blocked_chunk_ids: tuple[str, ...]
    evidence: tuple[TraceEvidence, ...]
    request: JSON | None
    attempts: tuple[JSON, ...]
    verification: Verification
    status: Status
    reported_status: Status
    answer: str
    citations: tuple[Citation, ...]
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def permitted_count(self) -> int:
        return len(self.evidence)

    def to_dict(self) -> JSON:
        """The trace as JSON: the keys and order every trace has been stored with."""
        return {
            "trace_id": self.trace_id,
            "created_at": self.created_at,
            "principal": _plain(self.principal),
            "question": self.question,
            "rewrite": self.rewrite,
            "settings": _plain(self.settings),
            "disclosure": self.disclosure,
            "query_terms": list(self.query_terms),
            "candidates": _plain(self.candidates),
            "permitted_count": self.permitted_count,
            "blocked_count": self.blocked_count,
            "blocked_chunk_ids": list(self.blocked_chunk_ids),
            "evidence": _plain(self.evidence),
            "request": self.request,
            "attempts": list(self.attempts),
            "verification": self.verification.to_dict(),
            "status": self.status.value,
            "reported_status": self.reported_status.value,
            "answer": self.answer,
            "citations": [c.to_dict() for c in self.citations],
            "timings_ms": dict(self.timings_ms),
        }

    @classmethod
    def from_dict(cls, data: JSON) -> Trace:
        """Read back what :meth:`to_dict` wrote (or an older trace, missing keys empty)."""
        status = Status(data["status"])
        settings = data.get("settings", {})
        verification = data.get("verification") or {}
        return cls(
            trace_id=data["trace_id"],
            created_at=data.get("created_at", ""),
            principal=TracePrincipal(
                data["principal"]["principal_id"], tuple(data["principal"].get("roles", ())),
                bool(data["principal"].get("admin", False))),
            question=data.get("question", ""),
            rewrite=data.get("rewrite"),
            settings=TraceSettings(
                mode=settings.get("mode", ""), top_k=settings.get("top_k", 0),
                terms=tuple(settings.get("terms", ())),
                answerer=settings.get("answerer", "extractive"), llm=settings.get("llm"),
                min_coverage=settings.get("min_coverage"),
                max_sentences=settings.get("max_sentences"),
                fusion_weights=settings.get("fusion_weights"),
                max_short_quotes=settings.get("max_short_quotes"),
                context_chars=settings.get("context_chars")),
            disclosure=data.get("disclosure", "disclose"),
            query_terms=tuple(data.get("query_terms", ())),
            candidates=tuple(
                TraceCandidate(**{**c, "matched_terms": tuple(c.get("matched_terms", ()))})
                for c in data.get("candidates", ())),
            blocked_count=data.get("blocked_count", 0),
            blocked_chunk_ids=tuple(data.get("blocked_chunk_ids", ())),
            evidence=tuple(TraceEvidence(**e) for e in data.get("evidence", ())),
            request=data.get("request"),
            attempts=tuple(data.get("attempts", ())),
            verification=Verification(
                ok=bool(verification.get("ok", False)),
                citations=tuple(Citation(**c) for c in verification.get("citations", ())),
                problems=tuple(verification.get("problems", ()))),
            status=status,
            reported_status=Status(data.get("reported_status", status)),
            answer=data.get("answer", ""),
            citations=tuple(Citation(**c) for c in data.get("citations", ())),
            timings_ms=dict(data.get("timings_ms", {})),
        )
