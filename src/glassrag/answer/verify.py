"""The citation verifier: an answer is shown only if every citation checks out.

It runs on every draft, extractive or from a model, and needs no model itself. A draft
passes when its status is one an answerer may return, an ``answered`` draft has text and
at least one citation, every cited chunk is in this request's permitted evidence, and every
quote occurs in the chunk it names. Problems name the citation (1-based) and the chunk id
the draft itself gave, and nothing else: a message must never tell anyone what a chunk
outside their evidence contains, or even whether it exists.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence

from glassrag.records import (
    ANSWERED,
    NO_EVIDENCE,
    Chunk,
    Citation,
    Draft,
    DraftCitation,
    Hit,
    Verification,
)

_WHITESPACE = re.compile(r"\s+")
# How much of a draft-supplied value a problem message repeats: enough to recognise it,
# never enough to turn the verdict into a copy of a long (possibly hostile) model output.
_SHOW_CHARS = 80


def normalize_for_match(text: str) -> str:
    """NFKC, then every whitespace run as one space, stripped.

    NFKC lets a quote written with half-width digits and letters match a document that uses
    full-width ones (and vice versa); collapsing whitespace lets a quote match across the
    line breaks of the chunk. Case is deliberately kept: a quote is a claim about the exact
    words of the document, and case carries meaning ("US" and "us", ``OPENAI_API_KEY`` and
    a prose word), so a re-cased quote is a paraphrase, not a quote.
    """
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def verify(
    draft: Draft, evidence: Sequence[Hit], *, blocked_chunk_ids: Collection[str] = ()
) -> Verification:
    """Check ``draft`` against this request's permitted ``evidence``.

    ``blocked_chunk_ids`` are chunks that matched but the principal may not read; citing one
    fails even if it somehow reached the evidence. On success the verdict carries full
    :class:`Citation` records; on failure it carries none, so a rejected draft's citations
    cannot be shown by mistake.
    """
    problems: list[str] = []
    if draft.status not in (ANSWERED, NO_EVIDENCE):
        problems.append(
            f"status {_show(draft.status)} is not one an answerer may return "
            f"({ANSWERED} or {NO_EVIDENCE})"
        )
    if draft.status == ANSWERED:
        if not draft.citations:
            problems.append("an answered draft must cite at least one chunk")
        if not isinstance(draft.text, str) or not draft.text.strip():
            problems.append("an answered draft has no answer text")
    if draft.status == NO_EVIDENCE and draft.citations:
        problems.append(
            f"a no_evidence draft must not carry citations (it has {len(draft.citations)})"
        )

    permitted: dict[str, Chunk] = {}
    for hit in evidence:
        permitted.setdefault(hit.chunk.chunk_id, hit.chunk)
    blocked = set(blocked_chunk_ids)
    normalized_texts: dict[str, str] = {}  # each chunk normalised once, however often cited
    citations: list[Citation] = []
    for number, cited in enumerate(draft.citations, start=1):
        problem = _check(number, cited, permitted, blocked, normalized_texts)
        if problem:
            problems.append(problem)
        else:
            citations.append(_citation(permitted[cited.chunk_id], cited.quote))
    if problems:
        return Verification(ok=False, citations=(), problems=tuple(problems))
    return Verification(ok=True, citations=tuple(citations), problems=())


def _check(
    number: int,
    cited: DraftCitation,
    permitted: dict[str, Chunk],
    blocked: set[str],
    normalized_texts: dict[str, str],
) -> str | None:
    """The problem with one citation, or None. Checks stop at the first failure."""
    label = f"citation {number}"
    chunk_id = cited.chunk_id
    if not isinstance(chunk_id, str) or not chunk_id:
        return f"{label}: no chunk_id"
    # A blocked chunk gets the very same words as an unknown one: a different message
    # would confirm to whoever reads it that a hidden chunk with that id exists.
    if chunk_id in blocked or chunk_id not in permitted:
        return (
            f"{label}: chunk {_show(chunk_id)} is not among this request's evidence "
            "(only permitted evidence may be cited)"
        )
    quote = cited.quote
    if not isinstance(quote, str) or not normalize_for_match(quote):
        return f"{label} (chunk {_show(chunk_id)}): the quote is empty"
    if chunk_id not in normalized_texts:
        normalized_texts[chunk_id] = normalize_for_match(permitted[chunk_id].text)
    if normalize_for_match(quote) not in normalized_texts[chunk_id]:
        return f"{label} (chunk {_show(chunk_id)}): the quote does not occur in the chunk's text"
    return None


def _citation(chunk: Chunk, quote: str) -> Citation:
    line_start, line_end = quote_lines(chunk, quote)
    return Citation(
        chunk_id=chunk.chunk_id, doc_id=chunk.doc_id, source=chunk.source, title=chunk.title,
        line_start=line_start, line_end=line_end, quote=quote, doc_version=chunk.doc_version,
        content_hash=chunk.content_hash, page=chunk.page, slide=chunk.slide,
        heading=chunk.heading,
    )


def quote_lines(chunk: Chunk, quote: str) -> tuple[int, int]:
    """The file lines a quote spans: narrowed within the chunk when it occurs verbatim.

    A quote that matched only after normalisation has no exact position, and a chunk whose
    newline count disagrees with its line range (a JSONL record's text, say) has no line
    map; both keep the chunk's whole range rather than guess.
    """
    core = quote.strip()
    text = chunk.text
    position = text.find(core) if core else -1
    if position < 0 or text.count("\n") != chunk.line_end - chunk.line_start:
        return chunk.line_start, chunk.line_end
    line_start = chunk.line_start + text.count("\n", 0, position)
    return line_start, line_start + core.count("\n")


def _show(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHOW_CHARS else shown[: _SHOW_CHARS - 3] + "..."
