"""Exact BM25 top-k for queries that hold a very common term.

A term found in a large share of the chunks (一个, 我们, 中国 in general Chinese text) has a
long posting list and a small weight. Tantivy's block-max WAND cannot skip it: its list is
positioned on nearly every candidate, so one such term makes a query cost about as much as
scoring every chunk that holds it (3-5x the same query without it). :func:`ranked` gets
the same hits, scores and order while reading much less of that list, or returns None when
it cannot prove them, and the caller then runs the whole query as before.

The chunks are ranked by the query's other, rarer terms first. A
chunk outside their best ``fetch`` scores at most the last of those on the rare terms, and
each common term adds at most its best score in any single chunk (its *ceiling*). The
candidates are rescored with the whole query (by Tantivy, term by term in query order, so
every score is bit-for-bit the whole query's); when enough of them score above that bound,
no other chunk can reach them and they are exactly the whole query's top-k, in its order.

Per-searcher values (ceilings here, intersection counts for :mod:`blocked_counts`) are
dropped when the index is reloaded.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import tantivy

if TYPE_CHECKING:
    from glassrag.retrieval.lexical import LexicalIndex

Occur = tantivy.Occur
#: A term is common for ranking when more than this share of the chunks hold it.
RANK_SHARE = 0.7
#: The rare terms' best ``FETCH_FACTOR * k`` (at least ``MIN_FETCH``) chunks are rescored.
FETCH_FACTOR = 3
MIN_FETCH = 30
#: Below this many postings a term's list is cheap to walk and nothing is gained.
MIN_POSTINGS = 1024
#: Relative slack on the bound, far above float32 rounding of a sum of up to 64 terms
#: (64 * 2^-24 = 4e-6), so a rounding error can never let an outside chunk through.
_SLACK = 1e-4

Hit = tuple[float, Any]  # (score, DocAddress), as Tantivy returns them


@dataclass
class _State:
    """What is known about one searcher (one version of the index)."""

    searcher: Any
    ceilings: dict[str, float] = field(default_factory=dict)
    counts: dict[frozenset[str], dict[int, int]] = field(default_factory=dict)


_states: weakref.WeakKeyDictionary[LexicalIndex, _State] = weakref.WeakKeyDictionary()


def searcher_state(lexical: LexicalIndex) -> _State:
    """The values kept for ``lexical``'s current searcher (new after every reload)."""
    searcher = lexical.searcher
    state = _states.get(lexical)
    if state is None or state.searcher is not searcher:
        state = _states[lexical] = _State(searcher)
    return state


def split(lexical: LexicalIndex, terms: Sequence[str], share: float
          ) -> tuple[list[str], list[str]]:
    """``(rare, common)``, each in query order: a term is common when more than ``share``
    of the chunks (and at least :data:`MIN_POSTINGS`) hold it."""
    searcher = lexical.searcher
    cut = max(share * searcher.num_docs, MIN_POSTINGS - 1)
    rare: list[str] = []
    common: list[str] = []
    for term in terms:
        (common if searcher.doc_freq("tokens", term) > cut else rare).append(term)
    return rare, common


def ceiling(lexical: LexicalIndex, term: str) -> float:
    """The best score ``term`` alone gives any chunk: the most it adds to a chunk's score."""
    state = searcher_state(lexical)
    value = state.ceilings.get(term)
    if value is None:
        hits = state.searcher.search(lexical.term_query(term), limit=1, count=False).hits
        value = state.ceilings[term] = float(hits[0][0]) if hits else 0.0
    return value


def ranked(lexical: LexicalIndex, terms: Sequence[str], readable: Collection[int] | None,
           limit: int, blocked_limit: int) -> tuple[list[Hit], list[Hit]] | None:
    """The whole query's best ``limit`` readable hits and best ``blocked_limit`` others
    (``readable`` None: every chunk is readable), or None when the bound does not hold."""
    rare, common = split(lexical, terms, RANK_SHARE)
    if not rare or not common:
        return None
    searcher = lexical.searcher
    fetch = max(FETCH_FACTOR * (limit + blocked_limit), MIN_FETCH)
    candidates = searcher.search(lexical.text_query(rare), limit=fetch, count=False).hits
    # A chunk outside the candidates scores at most `floor` on the rare terms (0 when every
    # chunk holding one is a candidate), plus at most `lift` on the common ones.
    floor = float(candidates[-1][0]) if len(candidates) == fetch else 0.0
    lift = sum(ceiling(lexical, term) for term in common)
    bound = (floor + lift) * (1 + _SLACK)
    # Only a candidate whose rare-term score plus every ceiling passes the bound can be
    # proven, so only those are rescored (and when too few are readable, none).
    useful = [(score, a) for score, a in candidates if score + lift > bound]
    roles = _role_sets(searcher, [a for _, a in useful]) if readable is not None else {}
    mine = [(score, a) for score, a in useful if readable is None or roles[_key(a)] in readable]
    if len(mine) < limit or len(useful) - len(mine) < blocked_limit:
        return None
    if blocked_limit:
        wanted = [a for _, a in useful]
    else:
        # A chunk's whole score is at least its rare-term score, so the limit-th readable
        # one is at least `least`; a candidate that cannot reach it is not rescored.
        least = mine[limit - 1][0] * (1 - _SLACK)
        wanted = [a for score, a in mine if score + lift > least]
    rowids = [int(r or 0) for r in searcher.fast_field_values("rowid", wanted)]
    rescored = searcher.search(rescore_query(lexical, terms, rowids), limit=len(rowids),
                               count=False).hits
    allowed: list[Hit] = []
    outside: list[Hit] = []
    for score, address in rescored:
        if score <= bound:
            break  # hits come best first: the rest may be beaten by chunks not rescored
        if readable is None or roles[_key(address)] in readable:
            allowed.append((score, address))
        else:
            outside.append((score, address))
    if len(allowed) < limit or len(outside) < blocked_limit:
        return None
    return allowed[:limit], outside[:blocked_limit]


def _key(address: Any) -> tuple[int, int]:
    return address.segment_ord, address.doc


def _role_sets(searcher: Any, addresses: Sequence[Any]) -> dict[tuple[int, int], int]:
    """Each chunk's role-set id, by address."""
    if not addresses:
        return {}
    sets = searcher.fast_field_values("roleset", list(addresses))
    return {_key(a): int(r or 0) for a, r in zip(addresses, sets, strict=True)}


def rescore_query(lexical: LexicalIndex, terms: Sequence[str], rowids: Sequence[int]
                  ) -> tantivy.Query:
    """The whole query over the chunks ``rowids`` only, scored exactly as the whole query.

    Each term is intersected with the chunks separately and the terms stay in query order:
    Tantivy then adds the same float32 term scores in the same order as for the whole
    query (the chunk clause scores 0). Intersecting the whole query instead would make
    Tantivy reposition every term's list for each chunk, which costs more than it saves.
    """
    schema = lexical.schema
    chunks = tantivy.Query.const_score_query(tantivy.Query.boolean_query(
        [(Occur.Should, tantivy.Query.term_query(schema, "rowid", int(r))) for r in rowids]),
        0.0)
    return tantivy.Query.boolean_query([
        (Occur.Should, tantivy.Query.boolean_query(
            [(Occur.Must, lexical.term_query(term)), (Occur.Must, chunks)]))
        for term in terms])
