"""Retrieval: BM25 over Tantivy, and the two seed scorers kept for reproduction.

Every mode applies the principal's roles while ranking, before top-k, and returns the
permitted hits with only a *count* of matching chunks the principal may not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .analysis import analyze, unique_terms
from .errors import EmptyQuery, InvalidInput
from .lexical import LexicalIndex, LexicalMatch
from .records import Hit, Principal
from .scorers import overlap_score, overlap_tokens, terms_score, validate_terms
from .store import Store

MODES = ("bm25", "overlap", "terms")
MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class Retrieval:
    """What a retriever found: permitted hits (best first) and the true blocked count.

    ``blocked`` holds the best blocked candidates. It exists for the status decision and the
    audit trace only; nothing that reaches a non-admin principal is built from it.
    """

    mode: str
    query_terms: tuple[str, ...]
    hits: list[Hit]
    blocked_count: int
    blocked: list[Hit] = field(default_factory=list)


def check_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise EmptyQuery("the query is empty", field="query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"the query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}",
            field="query",
        )
    return query.strip()


def retrieve(
    store: Store,
    lexical: LexicalIndex,
    query: str,
    principal: Principal,
    top_k: int,
    mode: str = "bm25",
    terms: Sequence[str] | None = None,
    blocked_limit: int = 0,
) -> Retrieval:
    """Rank chunks for ``query`` with the principal's roles applied inside the ranking."""
    query = check_query(query)
    if top_k < 1:
        raise InvalidInput("top_k must be at least 1", field="top_k")
    if terms:
        mode = "terms"
    if mode == "bm25":
        return _bm25(store, lexical, query, principal, top_k, blocked_limit)
    if mode == "overlap":
        return _overlap(store, query, principal, top_k, blocked_limit)
    if mode == "terms":
        if not terms:
            raise InvalidInput("mode 'terms' needs explicit terms (--terms)", field="terms")
        return _terms(store, validate_terms(list(terms)), principal, top_k, blocked_limit)
    raise InvalidInput(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}", field="mode")


def _bm25(store: Store, lexical: LexicalIndex, query: str, principal: Principal,
          top_k: int, blocked_limit: int) -> Retrieval:
    terms = unique_terms(analyze(query))
    if not terms:
        raise EmptyQuery(
            "the query has no searchable terms (only stop words or punctuation)", field="query"
        )
    readable = None if principal.admin else {
        rid for rid, roles in store.rolesets().items() if principal.can_read(roles)
    }
    matches, blocked_count, blocked_matches = lexical.search(
        terms, readable, top_k, blocked_limit
    )
    hits = _hits(store, matches, terms)
    # Defence in depth: the filter ran inside Tantivy; re-check against SQLite roles.
    permitted = [h for h in hits if principal.can_read(h.chunk.roles)]
    blocked = [h for h in _hits(store, blocked_matches, terms)
               if not principal.can_read(h.chunk.roles)]
    return Retrieval("bm25", tuple(terms), permitted, blocked_count, blocked)


def _hits(store: Store, matches: list[LexicalMatch], terms: list[str]) -> list[Hit]:
    rowids = [m.rowid for m in matches]
    chunks = store.chunks_by_rowid(rowids)
    tokens = store.tokens_by_rowid(rowids)
    hits = []
    for rank, match in enumerate(matches, start=1):
        chunk = chunks.get(match.rowid)
        if chunk is None:  # index ahead of a concurrent delete; skip, never guess
            continue
        present = set(tokens.get(match.rowid, "").split())
        hits.append(Hit(
            chunk=chunk, score=match.score,
            matched_terms=tuple(t for t in terms if t in present),
            scores={"bm25": match.score}, ranks={"bm25": rank},
        ))
    return hits


def _overlap(store: Store, query: str, principal: Principal, top_k: int,
             blocked_limit: int) -> Retrieval:
    terms = unique_terms(overlap_tokens(query))
    if not terms:
        raise EmptyQuery(
            "the query has no searchable terms (only stop words or punctuation)", field="query"
        )
    allowed: list[Hit] = []
    blocked: list[Hit] = []
    for chunk in store.iter_chunks():
        score, matched = overlap_score(query, chunk.title, chunk.text)
        if score == 0:
            continue
        hit = Hit(chunk=chunk, score=float(score), matched_terms=tuple(matched),
                  scores={"overlap": float(score)})
        (allowed if principal.can_read(chunk.roles) else blocked).append(hit)
    # Seed 000's order: score descending, then chunk_id.
    allowed.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    blocked.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    return Retrieval("overlap", tuple(terms), _ranked(allowed[:top_k], "overlap"),
                     len(blocked), blocked[:blocked_limit])


def _terms(store: Store, terms: list[str], principal: Principal, top_k: int,
           blocked_limit: int) -> Retrieval:
    allowed: list[Hit] = []
    blocked: list[Hit] = []
    for chunk in store.iter_chunks():
        score, matched = terms_score(terms, chunk.text)
        if score == 0:  # zero-score chunks are never selected (seed 001)
            continue
        hit = Hit(chunk=chunk, score=float(score), matched_terms=tuple(matched),
                  scores={"terms": float(score)})
        (allowed if principal.can_read(chunk.roles) else blocked).append(hit)
    # A stable sort on score alone keeps ingest order, then position in the document.
    allowed.sort(key=lambda h: -h.score)
    blocked.sort(key=lambda h: -h.score)
    return Retrieval("terms", tuple(terms), _ranked(allowed[:top_k], "terms"),
                     len(blocked), blocked[:blocked_limit])


def _ranked(hits: list[Hit], name: str) -> list[Hit]:
    return [
        Hit(chunk=h.chunk, score=h.score, matched_terms=h.matched_terms, scores=h.scores,
            ranks={name: rank})
        for rank, h in enumerate(hits, start=1)
    ]
