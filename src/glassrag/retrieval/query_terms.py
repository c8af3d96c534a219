"""The terms a query is searched with, bounded: a pasted paragraph (an error message, a
passage, a counter-argument) is searched by its most specific terms.

A BM25 query costs one posting-list walk per distinct term, so a 10,000-character question
with hundreds of distinct terms would cost hundreds of times a normal one. Above
:data:`MAX_QUERY_TERMS` distinct terms, the rarest are kept: a term found in few chunks says
most about which chunk is meant, and one found nowhere adds nothing to any score.

Rarity is counted among the chunks the asking principal may read, so which terms are kept
never depends on documents that principal cannot see.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import tantivy

from glassrag.retrieval.lexical import LexicalIndex
from glassrag.store.database import Store
from glassrag.text.analysis import analyze_query, unique_terms

#: Most distinct analysed terms a query is searched with (normal questions have < 30).
MAX_QUERY_TERMS = 64


def query_terms(query: str, store: Store, lexical: LexicalIndex,
                readable: Collection[int] | None) -> list[str]:
    """The distinct analysed terms of ``query`` in order, at most :data:`MAX_QUERY_TERMS`.

    ``readable`` is the role-set ids the principal may read (None: all, an admin).
    """
    terms = unique_terms(analyze_query(query))
    if len(terms) <= MAX_QUERY_TERMS:
        return terms
    return rarest(terms, doc_freqs(lexical, terms, readable, set(store.rolesets())))


def rarest(terms: list[str], counts: list[int]) -> list[str]:
    """The :data:`MAX_QUERY_TERMS` of ``terms`` found in the fewest chunks (``counts``), in
    query order. Unknown terms go last; among the rest the rarest first, ties in query order.
    """
    ranked = sorted(range(len(terms)), key=lambda i: (counts[i] == 0, counts[i], i))
    keep = set(ranked[:MAX_QUERY_TERMS])
    return [term for i, term in enumerate(terms) if i in keep]


def doc_freqs(lexical: LexicalIndex, terms: list[str], readable: Collection[int] | None,
              all_sets: Collection[int]) -> list[int]:
    """How many chunks the principal may read hold each term; ``all_sets`` is every role-set
    id, so a principal who may read them all is counted with the index's own statistics."""
    searcher = lexical.searcher
    if readable is None or set(all_sets) <= set(readable):
        return [int(searcher.doc_freq("tokens", term)) for term in terms]
    if not readable:
        return [0] * len(terms)
    roles = tantivy.Query.const_score_query(
        tantivy.Query.term_set_query(lexical.schema, "roleset", sorted(readable)), 0.0)
    out = []
    for term in terms:
        if not searcher.doc_freq("tokens", term):  # in no chunk at all: none to count
            out.append(0)
            continue
        query = tantivy.Query.boolean_query([
            (tantivy.Occur.Must, tantivy.Query.term_query(lexical.schema, "tokens", term)),
            (tantivy.Occur.Must, roles)])
        found: Any = searcher.search(query, limit=1, count=True)  # the stub omits .count
        out.append(int(found.count))
    return out
