"""The records that flow between glassrag's stages.

Plain frozen dataclasses: cheap to build, easy to compare in tests, and turned into
JSON with :func:`to_json` at the edges. pydantic is kept for the edges only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, get_args

PUBLIC_ROLE = "public"


class _Name(str, Enum):
    """A name in glassrag's contract. A member is a ``str``: it compares, hashes, formats
    and serialises (JSON, SQLite, TOML) as its value, so outputs carry the plain string."""

    def __str__(self) -> str:
        return str(self.value)


class Mode(_Name):
    """How a search ranks chunks."""

    BM25 = "bm25"  # Tantivy BM25
    DENSE = "dense"  # cosine over the embedder's vectors
    HYBRID = "hybrid"  # both, fused
    OVERLAP = "overlap"  # keyword overlap of plain tokens (retrieval.scorers)
    TERMS = "terms"  # 1-5 explicit terms, substring match (retrieval.scorers)


#: The modes a caller can choose by name alone (``terms`` comes with its terms), as the
#: type the HTTP and MCP request models declare; each must be a Mode (checked on import).
NamedMode = Literal["bm25", "dense", "hybrid", "overlap"]
NAMED_MODES = tuple(Mode(name) for name in get_args(NamedMode))
#: The modes that need an embedder.
DENSE_MODES = (Mode.DENSE, Mode.HYBRID)


class Status(_Name):
    """What became of a question."""

    ANSWERED = "answered"
    NO_EVIDENCE = "no_evidence"
    BLOCKED = "blocked_by_permission"
    UNVERIFIED = "unverified"


class Fusion(_Name):
    """How hybrid search combines its retrievers' rankings (see retrieval/fusion.py)."""

    RRF = "rrf"
    WEIGHTED = "weighted"


@dataclass(frozen=True)
class Principal:
    """Who is asking. ``public`` is always added: every principal may read public documents."""

    principal_id: str = "anonymous"
    roles: tuple[str, ...] = ()
    admin: bool = False

    def __init__(
        self, principal_id: str = "anonymous", roles: Iterable[object] = (), admin: bool = False
    ) -> None:
        cleaned = sorted({str(r).strip() for r in roles if str(r).strip()} | {PUBLIC_ROLE})
        object.__setattr__(self, "principal_id", principal_id)
        object.__setattr__(self, "roles", tuple(cleaned))
        object.__setattr__(self, "admin", admin)

    def can_read(self, roles: tuple[str, ...] | list[str]) -> bool:
        return self.admin or any(role in self.roles for role in roles)


@dataclass(frozen=True)
class SourceDocument:
    """A document as a reader produced it, before chunking and storage.

    ``text`` is the normalised text (newlines are ``\\n``, no BOM). ``line_offset`` is the
    number of file lines before ``text`` begins (front matter, a ``[doc:name]`` header), so
    chunk line numbers point at lines of the original file.
    ``roles`` is empty when the document itself named none; ingest then applies the roles
    rules file, the ``--roles`` option and finally the configured default role.
    """

    doc_id: str
    source: str
    title: str
    text: str
    path: str | None = None
    roles: tuple[str, ...] = ()
    parser: str = "text"
    encoding: str | None = None
    line_offset: int = 0
    chunker: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Position map for paged formats: ``positions["page"][i]`` is the page (1-based) that
    # line i + 1 of ``text`` came from; likewise ``"slide"`` for presentations. A chunk takes
    # the position of its first line.
    positions: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ChunkSpan:
    """A piece of a document's normalised text, as a chunker cut it.

    ``text == document_text[char_start:char_end]`` always holds; line numbers are 1-based
    and inclusive, counted in the original file (``line_offset`` already added).
    ``heading`` is the nearest heading, or for the ``docs`` chunker the heading path
    (``"Timeouts › Setting a default"``). ``index_text``, when set, is what search analyses
    instead of ``text`` (the heading path plus the text with markup reduced).
    """

    text: str
    line_start: int
    line_end: int
    char_start: int
    char_end: int
    heading: str | None = None
    index_text: str | None = None


@dataclass(frozen=True)
class Document:
    doc_id: str
    source: str
    title: str
    roles: tuple[str, ...]
    content_hash: str
    version: int
    parser: str
    chunker: str
    chunk_count: int
    path: str | None = None
    encoding: str | None = None
    line_offset: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    updated_at: str = ""
    positions: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    ordinal: int
    text: str
    line_start: int
    line_end: int
    char_start: int
    char_end: int
    heading: str | None
    roles: tuple[str, ...]
    doc_version: int
    content_hash: str
    title: str = ""
    source: str = ""
    page: int | None = None
    slide: int | None = None


@dataclass(frozen=True)
class Hit:
    """One permitted search result. ``scores``/``ranks`` are per retriever (``bm25``, …)."""

    chunk: Chunk
    score: float
    matched_terms: tuple[str, ...] = ()
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        c = self.chunk
        return {
            "chunk_id": c.chunk_id,
            "doc_id": c.doc_id,
            "title": c.title,
            "source": c.source,
            "line_start": c.line_start,
            "line_end": c.line_end,
            "score": round(self.score, 6),
            "matched_terms": list(self.matched_terms),
            "text": c.text,
            "heading": c.heading,
            "doc_version": c.doc_version,
            **_position(c.page, c.slide),
            "scores": {k: round(v, 6) for k, v in self.scores.items()},
            "ranks": dict(self.ranks),
        }


def _position(page: int | None, slide: int | None) -> dict[str, int]:
    """``page``/``slide`` keys only where the format has them."""
    out = {}
    if page is not None:
        out["page"] = page
    if slide is not None:
        out["slide"] = slide
    return out


@dataclass(frozen=True)
class SearchResult:
    """Permitted hits plus a *count* of matching chunks the principal may not read.

    Blocked chunks are never represented by anything but ``blocked_count``; their ids stay
    inside the store (issue: no id, title, source or text of a blocked chunk leaves).
    """

    query: str
    mode: str
    hits: list[Hit]
    blocked_count: int
    query_terms: tuple[str, ...] = ()
    # None when withheld (the ``conceal`` policy): the key is then left out.
    took_ms: float | None = 0.0
    # Hybrid: each retriever's weight in the fusion of this query; the key is left out in
    # the other modes.
    fusion_weights: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "query": self.query,
            "mode": self.mode,
            "query_terms": list(self.query_terms),
            "hits": [h.to_dict() for h in self.hits],
            "blocked_count": self.blocked_count,
        }
        if self.fusion_weights is not None:
            out["fusion_weights"] = dict(self.fusion_weights)
        if self.took_ms is not None:
            out["took_ms"] = round(self.took_ms, 3)
        return out


@dataclass(frozen=True)
class FailedInput:
    path: str
    error: str


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks: int = 0
    failed: list[FailedInput] = field(default_factory=list)
    took_ms: float = 0.0
    # Per parser name ("markdown", "pdf", ...): files it read and chunks written from them.
    parsers: dict[str, dict[str, int]] = field(default_factory=dict)
    # Files inside ingested directories that were not read, by reason ("unsupported type").
    skipped: dict[str, int] = field(default_factory=dict)
    # The paths behind ``skipped`` (for the failure log that why-not reads; not reported).
    skipped_files: list[str] = field(default_factory=list, repr=False)
    # Documents of this run (added, updated or unchanged) that got ``default_roles`` because
    # neither they, a roles rule nor the ingest's roles option named any.
    defaulted_roles: int = 0
    default_roles: list[str] = field(default_factory=list)
    # With a roles.toml holding rules: files with a document no rule gave roles to.
    no_rule_matched: list[str] = field(default_factory=list)
    # Per file: hidden pieces (HTML elements, PDF text runs, Word paragraphs) left out.
    hidden_dropped: dict[str, int] = field(default_factory=dict)
    # Past answered traces citing a document this ingest changed, whose citations no longer
    # hold (`glassrag traces stale` lists them).
    stale_answers: int = 0

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "chunks": self.chunks,
            "failed": [{"path": f.path, "error": f.error} for f in self.failed],
            "parsers": {name: dict(counts) for name, counts in sorted(self.parsers.items())},
            "skipped": dict(sorted(self.skipped.items())),
            "defaulted_roles": self.defaulted_roles,
            "default_roles": list(self.default_roles),
            "no_rule_matched": list(self.no_rule_matched),
            "hidden_dropped": {"total": sum(self.hidden_dropped.values()),
                               "files": dict(self.hidden_dropped)},
            "stale_answers": self.stale_answers,
            "took_ms": round(self.took_ms, 1),
        }


def to_json(obj: Any) -> Any:
    """Turn records (and containers of them) into JSON-ready values."""
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    return obj


# -- answers -------------------------------------------------------------------------------

# Short names for the statuses, used throughout.
ANSWERED = Status.ANSWERED
NO_EVIDENCE = Status.NO_EVIDENCE
BLOCKED = Status.BLOCKED
UNVERIFIED = Status.UNVERIFIED
STATUSES = tuple(Status)


@dataclass(frozen=True)
class DraftCitation:
    """What an answerer claims: this quote comes from this chunk. Not trusted until verified."""

    chunk_id: str
    quote: str


@dataclass(frozen=True)
class Draft:
    """An answerer's proposal, before verification. ``status`` is answered or no_evidence."""

    status: str
    text: str
    citations: tuple[DraftCitation, ...] = ()
    answerer: str = "extractive"
    # Why the answerer chose what it chose (sentence scores, threshold), for the trace.
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Citation:
    """A verified citation: the quote occurs in this chunk of this document version."""

    chunk_id: str
    doc_id: str
    source: str
    title: str
    line_start: int
    line_end: int
    quote: str
    doc_version: int = 0
    content_hash: str = ""
    page: int | None = None
    slide: int | None = None
    #: The cited chunk's heading path ("Timeouts › Setting a default"), if it has one.
    heading: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id, "doc_id": self.doc_id, "source": self.source,
            "title": self.title, "line_start": self.line_start, "line_end": self.line_end,
            **_position(self.page, self.slide), "heading": self.heading,
            "quote": self.quote, "doc_version": self.doc_version,
            "content_hash": self.content_hash,
        }


@dataclass(frozen=True)
class Verification:
    """The verifier's verdict on a draft. ``problems`` name each failed check."""

    ok: bool
    citations: tuple[Citation, ...] = ()
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "citations": [c.to_dict() for c in self.citations],
                "problems": list(self.problems)}


@dataclass(frozen=True)
class Answer:
    status: str
    answer: str
    citations: tuple[Citation, ...]
    evidence: tuple[Hit, ...]
    trace_id: str | None
    question: str = ""
    mode: str = "bm25"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "answer": self.answer,
            "citations": [c.to_dict() for c in self.citations],
            "evidence": [h.to_dict() for h in self.evidence],
            "trace_id": self.trace_id,
            "question": self.question,
            "mode": self.mode,
        }
