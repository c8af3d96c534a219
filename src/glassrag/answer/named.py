"""The named-thing check: an answer must quote a chunk that names what the question names,
when only a few readable chunks name it.

A question about a rare thing ("the default page size of Node's built-in SQLite module",
when a single page mentions SQLite) is answered only by one of the chunks that mention it.
A quote from any other chunk covers the question's common words and answers a different
question, however well it scores. Names that many chunks hold (the project's own name, a
platform) stay out of it: a right answer need not repeat them. The counts
(:attr:`~glassrag.retrieval.search.Retrieval.rare_names`) and the quoted chunks are both
of what the principal may read, so a hidden document never decides the check.
"""

from __future__ import annotations

from collections.abc import Sequence

from glassrag.answer.passages import heading_terms
from glassrag.records import NO_EVIDENCE, Draft, Hit
from glassrag.text.analysis import analyze
from glassrag.text.vocabulary import written_short_or_long

__all__ = ["unquoted_name", "unnamed_refusal"]


def unquoted_name(draft: Draft, hits: Sequence[Hit],
                  rare_names: Sequence[tuple[str, ...]]) -> str | None:
    """The first of ``rare_names`` (each given as the terms it may appear as) when the cited
    chunks of the first quote's document hold none of them in their text, heading path or
    title, or None. The first quote is the one that answers (or its page's title line,
    quoted before it); a quote from another document only adds to it, so a line that merely
    mentions the name (a release note) does not make an answer of a quote about something
    else. One rare name held is enough: a question that misspells one of two ("The Mark of
    Anarchy") is still about the page holding the other."""
    if not rare_names or not draft.citations:
        return None
    chunks = {h.chunk.chunk_id: h.chunk for h in hits}
    first = chunks.get(draft.citations[0].chunk_id)
    if first is None:
        return rare_names[0][0]
    held: set[str] = set()
    for chunk_id in dict.fromkeys(c.chunk_id for c in draft.citations):
        chunk = chunks.get(chunk_id)
        if chunk is not None and chunk.doc_id == first.doc_id:
            held.update(analyze(chunk.text))
            held |= heading_terms(chunk)
    # A name's form may also be written longer or shorter ("Brazil", "the Brazilian Amazon").
    if any(held.intersection(name) or written_short_or_long(name, held) for name in rare_names):
        return None
    return rare_names[0][0]


def unnamed_refusal(draft: Draft, hits: Sequence[Hit],
                    rare_names: Sequence[tuple[str, ...]]) -> Draft | None:
    """The ``no_evidence`` draft for an answered ``draft`` whose first quote's page lacks
    every rare name in its cited chunks (:func:`unquoted_name`), with the reason in its
    notes; None when it may be shown."""
    name = unquoted_name(draft, hits, rare_names)
    if name is None:
        return None
    notes: dict[str, object] = {
        "reason": f"the question names {name!r}, which only a few readable chunks hold, and "
                  "the answering quote is from none of them",
        "rare_name": name,
        "refused_chunks": [c.chunk_id for c in draft.citations],
    }
    return Draft(status=NO_EVIDENCE, text="", citations=(), answerer=draft.answerer,
                 notes=notes)
